"""A module that raises its own BaseException as it is imported (`--providers
raises_at_import:f` tests)."""


class Odd(BaseException):
    """Not an Exception: a module's own control-flow signal."""


raise Odd("raised at import")
