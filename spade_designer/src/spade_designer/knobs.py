"""The knob declarations' reader, :mod:`spade_core.knobs` (part of the environment contract,
in the kernel since ``spade serve`` and the trainer read knobs too); re-exported here, where
the designer's edits and plugin authors have imported it from."""

from spade_core.knobs import (
    HARDER_ATTRIBUTE,
    KNOBS_ATTRIBUTE,
    Knob,
    KnobDeclarationError,
    KnobSet,
    KnobValue,
    KnobValueError,
    apply_values,
    check_values,
    difficulty_ladder,
    format_values,
    parse_values,
    read_knobs,
)

__all__ = ["HARDER_ATTRIBUTE", "KNOBS_ATTRIBUTE", "Knob", "KnobDeclarationError", "KnobSet", "KnobValue",
           "KnobValueError", "apply_values", "check_values", "difficulty_ladder", "format_values", "parse_values",
           "read_knobs"]
