package postgres

// SecondsQuery is the query of Cells (samples false) and Seconds, for the
// tests that EXPLAIN it.
var SecondsQuery = secondsQuery
