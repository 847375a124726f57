"""The pipeline's stages. Each exposes ``check(run) -> str``: it returns a one-line summary
when the candidate passes and raises :class:`~spade_designer.validation.runner.Rejection`
when it does not."""
