"""The blocking MCP client."""

from .cache import ResponseCache
from .client import Client
from .listen import Subscription, SubscriptionNotification
from .mrtr import InputRequest, InputRequiredError

__all__ = ["Client", "InputRequest", "InputRequiredError", "ResponseCache", "Subscription",
           "SubscriptionNotification"]
