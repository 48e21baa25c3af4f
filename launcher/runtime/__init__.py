"""The bundled tensor-parallel runtime run by each torchrun worker (`python -m launcher.runtime`); never imports advisor."""
