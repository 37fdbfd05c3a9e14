"""Adapters from array libraries to xad's Backend (imported as ``xad_backends``)."""
