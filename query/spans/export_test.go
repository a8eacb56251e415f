package spans

// Slower reports whether c keeps spans slower than its threshold (else
// those not slower), for the external tests.
func Slower(c Condition) bool { return c.slower }
