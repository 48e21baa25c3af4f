"""Tensor-parallel building blocks; each layer reads its own weights (only this rank's slice) from a WeightReader."""
