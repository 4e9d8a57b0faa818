package crush

// CrushLnForTest exposes crushLn to the external tests.
func CrushLnForTest(u uint32) uint64 { return crushLn(u) }
