// Package aof holds the on-disk side of the append-only file, in Redis
// 7.0's multi-part layout: the manifest (which files make the AOF, in
// which order), the names of its files, the appender that writes the
// write-effect feed to the current incr file with the fsync policies, and
// the reader that walks one file's commands for the loader. The node
// package wires it to the keyspace, the command table and the cron.
//
// The directory (appenddirname) holds
//
//	<appendfilename>.<seq>.base.rdb   the base: an RDB image (or .base.aof, commands)
//	<appendfilename>.<seq>.incr.aof   the writes after the base, in RESP
//	<appendfilename>.manifest         one line per file: "file <name> seq <n> type <b|h|i>"
//
// so that redis-server and redis-check-aof 7.0 read a directory shoal
// wrote, and shoal reads one they wrote.
package aof

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/config"
)

// File types of the manifest.
const (
	TypeBase    = 'b'
	TypeHistory = 'h'
	TypeIncr    = 'i'
)

// Name parts (Redis's BASE_FILE_SUFFIX and friends).
const (
	baseSuffix     = ".base"
	incrSuffix     = ".incr"
	rdbSuffix      = ".rdb"
	aofSuffix      = ".aof"
	manifestSuffix = ".manifest"
	tempPrefix     = "temp-"
	// MaxManifestLine is the longest manifest line Redis reads.
	MaxManifestLine = 1024
)

// Info is one file of the manifest.
type Info struct {
	Name string
	Seq  int64
	Type byte
}

// Manifest lists the files of an AOF: the base (if any), history files
// (left by a rewrite, to be deleted) and the incr files in order.
type Manifest struct {
	Base    *Info
	History []Info
	Incr    []Info
	// The highest sequence numbers handed out, for the next names.
	BaseSeq, IncrSeq int64
}

// Empty reports a manifest without base or incr files (no AOF yet).
func (m *Manifest) Empty() bool { return m.Base == nil && len(m.Incr) == 0 }

// Clone returns a deep copy, to change and persist before it replaces m
// (a failure then leaves m as it was).
func (m *Manifest) Clone() *Manifest {
	c := &Manifest{BaseSeq: m.BaseSeq, IncrSeq: m.IncrSeq}
	if m.Base != nil {
		b := *m.Base
		c.Base = &b
	}
	c.History = append([]Info(nil), m.History...)
	c.Incr = append([]Info(nil), m.Incr...)
	return c
}

// Files lists the base (if any) then the incr files: what a load reads.
func (m *Manifest) Files() []Info {
	var out []Info
	if m.Base != nil {
		out = append(out, *m.Base)
	}
	return append(out, m.Incr...)
}

// String is the manifest file's text: the base first, then the history
// files, then the incr files, one "file <name> seq <n> type <t>" line each
// (a name that needs it is quoted as sdscatrepr does).
func (m *Manifest) String() string {
	var b strings.Builder
	line := func(i Info) {
		name := i.Name
		if needsRepr(name) {
			name = config.Repr(name)
		}
		fmt.Fprintf(&b, "file %s seq %d type %c\n", name, i.Seq, i.Type)
	}
	if m.Base != nil {
		line(*m.Base)
	}
	for _, i := range m.History {
		line(i)
	}
	for _, i := range m.Incr {
		line(i)
	}
	return b.String()
}

// needsRepr is sdsneedsrepr: a name with a quote, a backslash, a space or
// a non-printable byte is written quoted.
func needsRepr(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '"' || c == '\n' || c == '\r' || c == '\t' || c == '\a' || c == '\b' ||
			c < 0x20 || c > 0x7e || c == ' ' || c == '\v' || c == '\f' {
			return true
		}
	}
	return false
}

// ManifestError is a manifest that cannot be used, with Redis's words.
type ManifestError struct {
	Line    int    // 1-based line number, 0 when not about one line
	Text    string // the line, trimmed
	Message string // e.g. "Invalid AOF manifest file format"
}

func (e *ManifestError) Error() string { return e.Message }

// ParseManifest reads a manifest as Redis's aofLoadManifestFromFile: lines
// starting with '#' are comments, each other line is space-separated
// key/value pairs (file, seq, type; unknown keys are ignored for forward
// compatibility), a line longer than MaxManifestLine or an empty file
// fails, as does a second base or incr sequence numbers that do not grow.
func ParseManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
	if len(data) == 0 {
		return nil, &ManifestError{Message: "Found an empty AOF manifest"}
	}
	rest := string(data)
	var maxSeq int64
	for n := 1; rest != ""; n++ {
		raw := rest
		nl := strings.IndexByte(rest, '\n')
		if nl >= 0 {
			raw, rest = rest[:nl+1], rest[nl+1:]
		} else {
			rest = ""
		}
		if raw[0] == '#' {
			continue // a comment
		}
		// fgets reads at most MaxManifestLine bytes of one line.
		if len(raw) > MaxManifestLine {
			raw = raw[:MaxManifestLine]
		}
		line := strings.Trim(raw, " \t\r\n")
		if !strings.Contains(raw, "\n") {
			return nil, &ManifestError{Line: n, Text: line, Message: "The AOF manifest file contains too long line"}
		}
		bad := func(msg string) error { return &ManifestError{Line: n, Text: line, Message: msg} }
		if line == "" {
			return nil, bad("Invalid AOF manifest file format")
		}
		argv, ok := config.SplitArgs(line)
		if !ok || len(argv) < 6 || len(argv)%2 != 0 {
			return nil, bad("Invalid AOF manifest file format")
		}
		var info Info
		for i := 0; i < len(argv); i += 2 {
			switch strings.ToLower(argv[i]) {
			case "file":
				info.Name = argv[i+1]
				if filepath.Base(info.Name) != info.Name || strings.ContainsRune(info.Name, '/') {
					return nil, bad("File can't be a path, just a filename")
				}
			case "seq":
				info.Seq = atoll(argv[i+1])
			case "type":
				if argv[i+1] != "" {
					info.Type = argv[i+1][0]
				}
			}
		}
		if info.Name == "" || info.Seq == 0 || info.Type == 0 {
			return nil, bad("Invalid AOF manifest file format")
		}
		switch info.Type {
		case TypeBase:
			if m.Base != nil {
				return nil, bad("Found duplicate base file information")
			}
			b := info
			m.Base = &b
			m.BaseSeq = info.Seq
		case TypeHistory:
			m.History = append(m.History, info)
		case TypeIncr:
			if info.Seq <= maxSeq {
				return nil, bad("Found a non-monotonic sequence number")
			}
			m.Incr = append(m.Incr, info)
			m.IncrSeq = info.Seq
			maxSeq = info.Seq
		default:
			return nil, bad("Unknown AOF file type")
		}
	}
	return m, nil
}

// atoll is C's atoll: leading spaces, an optional sign, the digits that
// follow; 0 when none.
func atoll(s string) int64 {
	v, _ := cInt(s)
	return v
}

// cInt reads an integer the way C's strtol does: leading spaces, an
// optional sign, then the digits that follow. overflow reports digits that
// do not fit an int64.
func cInt(s string) (v int64, overflow bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	v, err := strconv.ParseInt(s[:end], 10, 64)
	return v, err != nil && end > digits
}

// NewBase names the next base file and makes the current base (if any) a
// history file: <filename>.<seq>.base.rdb, or .base.aof when the base is
// written as commands.
func (m *Manifest) NewBase(filename string, rdb bool) string {
	if m.Base != nil {
		h := *m.Base
		h.Type = TypeHistory
		m.History = append([]Info{h}, m.History...)
	}
	m.BaseSeq++
	suffix := aofSuffix
	if rdb {
		suffix = rdbSuffix
	}
	m.Base = &Info{Name: fmt.Sprintf("%s.%d%s%s", filename, m.BaseSeq, baseSuffix, suffix), Seq: m.BaseSeq, Type: TypeBase}
	return m.Base.Name
}

// NewIncr appends the next incr file, <filename>.<seq>.incr.aof.
func (m *Manifest) NewIncr(filename string) string {
	m.IncrSeq++
	i := Info{Name: fmt.Sprintf("%s.%d%s%s", filename, m.IncrSeq, incrSuffix, aofSuffix), Seq: m.IncrSeq, Type: TypeIncr}
	m.Incr = append(m.Incr, i)
	return i.Name
}

// LastIncr is the last incr file, appending a new one when there is none.
func (m *Manifest) LastIncr(filename string) string {
	if len(m.Incr) == 0 {
		return m.NewIncr(filename)
	}
	return m.Incr[len(m.Incr)-1].Name
}

// MarkIncrHistory makes the incr files a rewrite covered history files;
// keepLast keeps the last one (the file being written while the AOF is on).
func (m *Manifest) MarkIncrHistory(keepLast bool) {
	n := len(m.Incr)
	if keepLast && n > 0 {
		n--
	}
	// Redis walks them from the newest and adds each at the head.
	for i := 0; i < n; i++ {
		h := m.Incr[i]
		h.Type = TypeHistory
		m.History = append([]Info{h}, m.History...)
	}
	m.Incr = append([]Info(nil), m.Incr[n:]...)
}

// ManifestName is <filename>.manifest.
func ManifestName(filename string) string { return filename + manifestSuffix }

// TempIncrName is the incr file written while the AOF waits for its first
// rewrite (temp-<filename>.incr).
func TempIncrName(filename string) string { return tempPrefix + filename + incrSuffix }

// ErrNoManifest is returned by ReadManifest when there is no directory or
// no manifest in it.
var ErrNoManifest = errors.New("no AOF manifest")

// ReadManifest reads dir/<filename>.manifest; ErrNoManifest when the
// directory or the file does not exist.
func ReadManifest(dir, filename string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestName(filename)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoManifest
	}
	if err != nil {
		return nil, err
	}
	return ParseManifest(data)
}

// WriteManifest persists m as Redis's writeAofManifestFile: the text goes
// to temp-<filename>.manifest, which is fsynced, renamed over the manifest,
// and the directory is fsynced so the rename (and the files it names) is
// durable. The returned error's text is Redis's log line.
func WriteManifest(dir, filename string, m *Manifest) error {
	name := ManifestName(filename)
	tmpName := tempPrefix + name
	path, tmp := filepath.Join(dir, name), filepath.Join(dir, tmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("Can't open the AOF manifest file %s: %s", tmpName, errText(err))
	}
	defer f.Close()
	if _, err := f.WriteString(m.String()); err != nil {
		return fmt.Errorf("Error trying to write the temporary AOF manifest file %s: %s", tmpName, errText(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("Fail to fsync the temp AOF file %s: %s.", tmpName, errText(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("Error trying to rename the temporary AOF manifest file %s into %s: %s", tmpName, name, errText(err))
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("Fail to fsync AOF directory %s: %s.", path, errText(err))
	}
	return nil
}

// SyncDir fsyncs a directory, so renames and new files in it survive a
// crash (fsyncFileDir).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// errText is strerror's text for an I/O error ("No such file or directory").
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	t := err.Error()
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}
