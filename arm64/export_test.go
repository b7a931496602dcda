package arm64

// GNUAs is gas for the external tests: GNU as's encoding of src, or a skip without it.
var GNUAs = gas
