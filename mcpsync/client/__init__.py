"""The blocking MCP client."""

from .cache import ResponseCache
from .client import Client
from .listen import Subscription, SubscriptionNotification
from .mrtr import InputRequest, InputRequiredError
from .options import ClientLimits, ClientMiddleware, HostHandlers
from .tasks import TaskCancelledError, TaskHandle, TaskState

__all__ = ["Client", "ClientLimits", "ClientMiddleware", "HostHandlers", "InputRequest",
           "InputRequiredError", "ResponseCache", "Subscription", "SubscriptionNotification",
           "TaskCancelledError", "TaskHandle", "TaskState"]
