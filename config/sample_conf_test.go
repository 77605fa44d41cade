package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// deploy/shoal.conf (the sample the start-up warning points to) loads, and
// so does every directive it shows commented out, each uncommented alone:
// a sample must not teach a value shoal refuses.
func TestSampleConfLoads(t *testing.T) {
	path := filepath.Join("..", "deploy", "shoal.conf")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = Load([]string{path})
	require.NoError(t, err)

	commented := regexp.MustCompile(`^# ([a-z][a-z-]+) (.+)$`)
	known := New()
	dir := t.TempDir()
	lines := strings.Split(string(data), "\n")
	tried := 0
	for i, line := range lines {
		m := commented.FindStringSubmatch(line)
		if m == nil || !known.Has(m[1]) {
			continue
		}
		variant := append([]string(nil), lines...)
		variant[i] = m[1] + " " + m[2]
		p := filepath.Join(dir, "variant.conf")
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(variant, "\n")), 0o644))
		_, err := Load([]string{p})
		require.NoError(t, err, "uncommented: %s", variant[i])
		tried++
	}
	require.Greater(t, tried, 20, "commented directives found")
}
