// Package strconvx converts numbers to and from text by Redis's rules, where
// they differ from Go's strconv: string2ll's strict integers, "%.17g"
// doubles with Redis's inf/nan spellings, and the x87 long double arithmetic
// and formatting of INCRBYFLOAT and HINCRBYFLOAT. It imports nothing of
// shoal's, so every package can use it.
package strconvx
