"""The blocking MCP client."""

from .cache import ResponseCache
from .client import Client
from .listen import Subscription, SubscriptionNotification
from .mrtr import InputRequest, InputRequiredError
from .tasks import TaskCancelledError, TaskHandle, TaskState

__all__ = ["Client", "InputRequest", "InputRequiredError", "ResponseCache", "Subscription",
           "SubscriptionNotification", "TaskCancelledError", "TaskHandle", "TaskState"]
