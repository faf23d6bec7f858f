"""ctxkeep-gui: a Qt window on ctxkeepd, with its context gauge."""
