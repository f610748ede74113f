"""The release benchmark: kernels changed between two released versions of a package
(``run``; ``fetch`` downloads the releases)."""
