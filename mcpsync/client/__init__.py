"""The blocking MCP client."""

from .cache import ResponseCache
from .calls import InputRequest, InputRequiredError
from .client import Client
from .listen import Subscription, SubscriptionNotification
from .options import ClientLimits, ClientMiddleware, HostHandlers
from .tasks import TaskCancelledError, TaskHandle, TaskState

__all__ = ["Client", "ClientLimits", "ClientMiddleware", "HostHandlers", "InputRequest",
           "InputRequiredError", "ResponseCache", "Subscription", "SubscriptionNotification",
           "TaskCancelledError", "TaskHandle", "TaskState"]
