package migrate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/slots"
)

// JobSpec is one export requested by CLUSTER MIGRATESLOTS: the slots and
// the target's id.
type JobSpec struct {
	Slots  []int // ascending, no repeats
	Target string
}

var errMigrateSyntax = errors.New("ERR syntax error")

// ParseMigrateSlots parses the arguments after CLUSTER MIGRATESLOTS:
// SLOTSRANGE start end [start end ...] NODE id, repeated. A slot named
// twice, in one job or two, is an error.
func ParseMigrateSlots(args [][]byte) ([]JobSpec, error) {
	var specs []JobSpec
	var seen slots.Bitmap
	i := 0
	if len(args) == 0 {
		return nil, errMigrateSyntax
	}
	for i < len(args) {
		if !strings.EqualFold(string(args[i]), "slotsrange") {
			return nil, errMigrateSyntax
		}
		i++
		var spec JobSpec
		for i < len(args) && !strings.EqualFold(string(args[i]), "node") {
			if i+1 >= len(args) || strings.EqualFold(string(args[i+1]), "node") {
				return nil, errMigrateSyntax
			}
			start, end, err := parseSlotRange(args[i], args[i+1])
			if err != nil {
				return nil, err
			}
			for s := start; s <= end; s++ {
				if seen.Has(s) {
					return nil, fmt.Errorf("ERR Slot %d specified multiple times", s)
				}
				seen.Set(s)
				spec.Slots = append(spec.Slots, s)
			}
			i += 2
		}
		if len(spec.Slots) == 0 || i+1 >= len(args) {
			return nil, errMigrateSyntax
		}
		spec.Target = string(args[i+1])
		i += 2
		specs = append(specs, spec)
	}
	for k := range specs {
		slices.Sort(specs[k].Slots)
	}
	return specs, nil
}

// parseSlotRange parses one start/end pair, as CLUSTER ADDSLOTSRANGE does.
func parseSlotRange(startArg, endArg []byte) (start, end int, err error) {
	if start, err = slots.ParseSlot(startArg); err != nil {
		return 0, 0, err
	}
	if end, err = slots.ParseSlot(endArg); err != nil {
		return 0, 0, err
	}
	if start > end {
		return 0, 0, fmt.Errorf("ERR start slot number %d is greater than end slot number %d", start, end)
	}
	return start, end, nil
}

// eachRun calls fn with the first and last slot of every run of
// consecutive slots in list (ascending).
func eachRun(list []int, fn func(first, last int)) {
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		fn(list[i], list[j])
		i = j + 1
	}
}

// formatRanges writes slots (ascending) as "a-b c-c d-e".
func formatRanges(list []int) string {
	var b strings.Builder
	eachRun(list, func(first, last int) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(first))
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(last))
	})
	return b.String()
}

// rangeArgs returns slots (ascending) as start/end argument pairs.
func rangeArgs(list []int) [][]byte {
	var out [][]byte
	eachRun(list, func(first, last int) {
		out = append(out, []byte(strconv.Itoa(first)), []byte(strconv.Itoa(last)))
	})
	return out
}

// ParseImportRanges parses start/end pairs (CLUSTER IMPORTSLOTS BEGIN).
func ParseImportRanges(args [][]byte) ([]int, error) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, errMigrateSyntax
	}
	var seen slots.Bitmap
	var list []int
	for i := 0; i < len(args); i += 2 {
		start, end, err := parseSlotRange(args[i], args[i+1])
		if err != nil {
			return nil, err
		}
		for s := start; s <= end; s++ {
			if !seen.Has(s) {
				seen.Set(s)
				list = append(list, s)
			}
		}
	}
	slices.Sort(list)
	return list, nil
}
