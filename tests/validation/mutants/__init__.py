"""A mutation corpus for the validator: sound environments and their hand-made defects."""
