"""Tests of spade_core: the contracts, the CLI commands, import/export."""
