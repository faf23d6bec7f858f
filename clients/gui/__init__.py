"""ctxkeep-gui: a Qt window on ctxkeepd, with seed 000's ContextGauge."""
