//go:build race

package command

// raceBuild: the store checks a slot it is given against the key (store/slotcheck_on.go).
const raceBuild = true
