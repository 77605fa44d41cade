//go:build !race

package command

// raceBuild: see race_on_test.go.
const raceBuild = false
