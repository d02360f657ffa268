"""Domain errors, defined once; the API maps them to JSON and the dashboard to an HTML page."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409


class InvalidInput(DomainError):
    status_code = 422


class Unauthorized(DomainError):
    status_code = 401


class PermissionDenied(DomainError):
    status_code = 403


class PayloadTooLarge(DomainError):
    status_code = 413


class QuotaExceeded(DomainError):
    status_code = 429
