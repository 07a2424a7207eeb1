"""The DVC stages of the training workspace, one module per stage (see ``dvc.yaml`` and docs/pipeline.md)."""
