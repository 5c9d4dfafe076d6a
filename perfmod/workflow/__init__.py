"""Running the studies: papermill notebooks (:mod:`.notebooks`)."""
