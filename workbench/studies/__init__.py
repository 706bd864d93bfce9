"""Studies: reports, findings, the study, publishing, reproduction, the gate, batches, the runner."""
