"""`perfkit profile` as steps: sweep -> tune tables -> analysis -> ncu -> run.json -> store."""
