"""The context window: token estimates and their calibration, usage and its announcement,
prompt assembly (what the model sees of each message) and the reading speeds that bound
recall. Compaction, which changes what the window holds, is compaction/'s."""
