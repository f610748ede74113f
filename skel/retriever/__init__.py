"""From a kernel (and its profile) to ranked, explained skeleton suggestions."""
