"""All ORM models; import from here so Alembic and the app see every table."""
from server.models.audit import AuditEvent
from server.models.base import Base
from server.models.case_day import CaseDay
from server.models.case_result import CaseResult
from server.models.culprit import SuiteRunCulprit
from server.models.history_span import HistorySpan
from server.models.job import Job
from server.models.operator import CaseState, Operator
from server.models.submission import Submission
from server.models.suite import Suite
from server.models.suite_run import SuiteRun, SuiteRunResult
from server.models.token import ApiToken
from server.models.web_session import WebSession
from server.models.webhook import WebhookDelivery
from server.models.worker import Worker

__all__ = ["ApiToken", "AuditEvent", "Base", "CaseDay", "CaseResult", "CaseState", "HistorySpan", "Job", "Operator", "Submission", "Suite", "SuiteRun",
           "SuiteRunCulprit", "SuiteRunResult", "WebSession", "WebhookDelivery", "Worker"]
