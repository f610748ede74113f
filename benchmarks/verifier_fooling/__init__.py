"""The verifier-fooling benchmark (issue #36, item 6): a corpus of reward hacks and honest
candidates for `skel verify`, on one row-softmax problem (original.py); runner.py runs them."""
