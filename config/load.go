package config

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LoadError is a fatal configuration error. Error() returns exactly what
// redis-server 7.0.15 prints before exiting with status 1:
//
//	(empty line)
//	*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***
//	Reading the configuration file, at line 2
//	>>> 'foo bar'
//	Bad directive or wrong number of arguments
//
// (the two "Reading"/">>>" lines are omitted for errors found after the
// whole file was read, Line is then 0). Redis writes that text to stderr.
//
// When a configuration file can't be opened, OpenFailure is true and
// Error() is Redis's log message "Fatal error, can't open config file
// '<path>': <reason>", which Redis writes as a warning through its logger.
type LoadError struct {
	Line        int    // 1-based line number, 0 when not related to a line
	Text        string // the offending line (trimmed, as Redis shows it)
	Reason      string // e.g. "Bad directive or wrong number of arguments"
	OpenFailure bool   // the file could not be opened (Reason holds the message)
}

func (e *LoadError) Error() string {
	if e.OpenFailure {
		return e.Reason
	}
	var b strings.Builder
	b.WriteString("\n*** FATAL CONFIG FILE ERROR (Redis " + RedisVersion + ") ***\n")
	if e.Line > 0 {
		b.WriteString("Reading the configuration file, at line " + strconv.Itoa(e.Line) + "\n")
		b.WriteString(">>> '" + e.Text + "'\n")
	}
	b.WriteString(e.Reason + "\n")
	return b.String()
}

// LoadOptions tunes LoadWith.
type LoadOptions struct {
	// Stdin is read when the command line asks for the configuration from
	// standard input ("-"). Nil means os.Stdin.
	Stdin io.Reader
	// CommandExists, when set, validates rename-command like Redis does
	// ("No such command in rename-command", "Target command name already
	// exists"). When nil, every rename-command parses (the server applies
	// them to its command table: Config.RenamedCommands).
	CommandExists func(name string) bool
	// ValidateUser, when set, validates the arguments of a "user" directive
	// (user name followed by ACL rules). On error, Load fails with Redis's
	// "Error in user declaration '<badArg>': <err>" (shoal-server passes
	// package acl's validator: duplicate users, malformed rules).
	ValidateUser func(args []string) (badArg string, err error)

	acceptUnbuilt bool // see Config.acceptUnbuilt
}

// Load builds the configuration from the server command line (the
// arguments after the program name) exactly like redis-server 7.0: an
// optional first argument not starting with "-" is the configuration file,
// "-" (first or last argument) reads the configuration from stdin, and
// "--name value ..." options are appended as extra lines after the file's
// content, so that they win. The error, if any, is a *LoadError.
func Load(args []string) (*Config, error) { return LoadWith(args, LoadOptions{}) }

// LoadWith is Load with options.
func LoadWith(args []string, opts LoadOptions) (*Config, error) {
	c := New()
	c.acceptUnbuilt = opts.acceptUnbuilt
	if len(args) == 0 {
		return c, nil
	}
	ld := &loader{c: c, opts: opts, lastSet: make(map[*directive]lineRef),
		refusedLines: make(map[string]lineRef)}
	if opts.CommandExists != nil {
		ld.removed = make(map[string]bool)
		ld.added = make(map[string]bool)
	}
	configFile, fromStdin, options := parseCommandLine(args)
	if configFile != nil {
		c.configFile = *configFile
	}
	if err := ld.loadServerConfig(configFile, fromStdin, &options); err != nil {
		return nil, err
	}
	if !opts.acceptUnbuilt {
		if err := ld.checkUnbuilt(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseCommandLine mirrors the option parsing of redis-server's main():
// it returns the absolute path of the config file (if any), whether stdin
// must be read, and the options rewritten as configuration lines.
func parseCommandLine(args []string) (configFile *string, fromStdin bool, options string) {
	var opts strings.Builder
	j := 0
	if args[0] == "" || args[0][0] != '-' {
		p := absolutePath(args[0])
		configFile = &p
		j = 1
	}
	handledLast := true
	last := len(args) - 1
	for ; j < len(args); j++ {
		a := args[j]
		if a == "-" && (j == 0 || j == last) {
			fromStdin = true
		} else if handledLast && strings.HasPrefix(a, "--") {
			if opts.Len() > 0 {
				opts.WriteString("\n")
			}
			opts.WriteString(a[2:])
			opts.WriteString(" ")
			split, ok := SplitArgs(a)
			n := len(split)
			if !ok {
				n = 0
			}
			if n == 1 {
				handledLast = false
				nextIsOption := j != last && strings.HasPrefix(args[j+1], "--")
				switch {
				case nextIsOption && strings.EqualFold(a, "--save"):
					opts.WriteString(`""`)
					handledLast = true
				case j == last && strings.EqualFold(a, "--save"):
					opts.WriteString(`""`)
				case nextIsOption && strings.EqualFold(a, "--sentinel"):
					handledLast = true
				}
			} else {
				handledLast = true
			}
		} else {
			opts.WriteString(Repr(a))
			opts.WriteString(" ")
			handledLast = true
		}
	}
	return configFile, fromStdin, opts.String()
}

// absolutePath mirrors getAbsolutePath(): trims blanks, joins relative
// paths to the working directory, resolving leading "../" elements.
func absolutePath(p string) string {
	rel := trimSet(p, " \r\n\t")
	if strings.HasPrefix(rel, "/") {
		return rel
	}
	abs := currentDir()
	if abs == "" {
		return rel
	}
	if !strings.HasSuffix(abs, "/") {
		abs += "/"
	}
	for strings.HasPrefix(rel, "../") {
		rel = rel[3:]
		if len(abs) > 1 {
			i := strings.LastIndexByte(abs[:len(abs)-1], '/')
			abs = abs[:i+1]
		}
	}
	return abs + rel
}

type loader struct {
	c    *Config
	opts LoadOptions

	readingFile bool // Redis's reading_config_file (reset after an include!)
	saveLoaded  bool // the first "save" line replaced the defaults

	removed, added map[string]bool // rename-command bookkeeping

	seq          int                    // lines read so far, across included files
	lastSet      map[*directive]lineRef // the line that set each directive's value last
	refusedLines map[string]lineRef     // first line of each keyword refused when present
}

// loadServerConfig mirrors loadServerConfig(): file content, then stdin,
// then "\n" and the options.
func (ld *loader) loadServerConfig(filename *string, fromStdin bool, options *string) error {
	var content strings.Builder
	if filename != nil {
		name := *filename
		if strings.ContainsAny(name, "*?[") {
			pattern := ld.resolve(name)
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				data, err := readConfigFile(m)
				if err != nil {
					shown := m
					if !filepath.IsAbs(name) {
						if r, rerr := filepath.Rel(ld.c.String("dir"), m); rerr == nil {
							shown = r
						}
					}
					return openError(shown, err)
				}
				content.WriteString(data)
			}
		} else {
			data, err := readConfigFile(ld.resolve(name))
			if err != nil {
				return openError(name, err)
			}
			content.WriteString(data)
		}
	}
	if fromStdin {
		in := ld.opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		data, _ := io.ReadAll(in)
		content.Write(data)
	}
	if options != nil {
		content.WriteString("\n")
		content.WriteString(*options)
	}
	return ld.loadFromString(content.String())
}

func openError(name string, err error) error {
	return &LoadError{OpenFailure: true,
		Reason: "Fatal error, can't open config file '" + name + "': " + strerror(err)}
}

// readConfigFile reads a file like fopen()+fgets(): a directory can be
// opened and reads as empty.
func readConfigFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return "", nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", nil // fgets() stops at the first error
	}
	return string(data), nil
}

// resolve makes a path relative to the current "dir" (Redis chdir()s when
// it reads a dir directive, so later relative paths are relative to it).
func (ld *loader) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(ld.c.String("dir"), p)
}

// isDeprecated reports the directives Redis 7.0 silently ignores.
func isDeprecated(name string, argc int) bool {
	switch name {
	case "list-max-ziplist-entries", "list-max-ziplist-value", "lua-replicate-commands":
		return argc == 2
	}
	return false
}

// loadFromString mirrors loadServerConfigFromString().
func (ld *loader) loadFromString(config string) error {
	c := ld.c
	ld.readingFile = true
	lines := strings.Split(config, "\n")
	fail := func(i int, line, reason string) error {
		return &LoadError{Line: i + 1, Text: line, Reason: reason}
	}
	for i, raw := range lines {
		line := trimSet(raw, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		argv, ok := SplitArgs(line)
		if !ok {
			return fail(i, line, "Unbalanced quotes in configuration line")
		}
		if len(argv) == 0 {
			continue
		}
		argv[0] = asciiLower(argv[0])
		argc := len(argv)
		ld.seq++
		here := lineRef{line: i + 1, text: line, seq: ld.seq}
		refuseLine := func(keyword string) {
			if _, seen := ld.refusedLines[keyword]; !seen {
				ld.refusedLines[keyword] = here
			}
		}

		if e := c.lookup(argv[0]); e != nil {
			d := e.d
			if !d.has(FlagMultiArg) && argc != 2 {
				return fail(i, line, "wrong number of arguments")
			}
			args := argv[1:]
			if d.has(FlagMultiArg) && argc == 2 && argv[1] != "" {
				// "--save '900 1 300 10'" style: split the single argument.
				split, ok := SplitArgs(argv[1])
				if !ok {
					split = []string{}
				}
				args = split
			}
			v, msg := d.parse(c, args, setCtx{fromFile: true, ld: ld})
			if msg != "" {
				return fail(i, line, msg)
			}
			d.cur.Store(v)
			ld.lastSet[d] = here
			continue
		}
		if isDeprecated(argv[0], argc) {
			continue
		}

		switch {
		case argv[0] == "include" && argc == 2:
			if err := ld.loadServerConfig(&argv[1], false, nil); err != nil {
				return err
			}
		case argv[0] == "rename-command" && argc == 3:
			if msg := ld.renameCommand(argv[1], argv[2]); msg != "" {
				return fail(i, line, msg)
			}
			c.renames = append(c.renames, [2]string{argv[1], argv[2]})
		case argv[0] == "user" && argc >= 2:
			if ld.opts.ValidateUser != nil {
				if bad, err := ld.opts.ValidateUser(append([]string{}, argv[1:]...)); err != nil {
					return fail(i, line, "Error in user declaration '"+bad+"': "+err.Error())
				}
			}
			c.users = append(c.users, append([]string{}, argv[1:]...))
		case argv[0] == "loadmodule" && argc >= 2:
			c.modules = append(c.modules, append([]string{}, argv[1:]...))
			refuseLine(lineLoadModule)
		case strings.Contains(argv[0], "."):
			if argc < 2 {
				return fail(i, line, "Module config specified without value")
			}
			val := strings.Join(argv[1:], " ")
			replaced := false
			for k := range c.moduleConfigs {
				if c.moduleConfigs[k][0] == argv[0] {
					c.moduleConfigs[k][1] = val
					replaced = true
				}
			}
			if !replaced {
				c.moduleConfigs = append(c.moduleConfigs, [2]string{argv[0], val})
			}
			refuseLine(lineModuleConfig)
		case argv[0] == "sentinel":
			// A lone "sentinel" selects sentinel mode in Redis (handled
			// before parsing); shoal has no sentinel mode.
			if argc != 1 {
				return fail(i, line, "sentinel directive while not in sentinel mode")
			}
		default:
			return fail(i, line, "Bad directive or wrong number of arguments")
		}
	}

	if logfile := c.String("logfile"); logfile != "" {
		f, err := os.OpenFile(ld.resolve(logfile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return &LoadError{Reason: "Can't open the log file: " + strerror(err)}
		}
		f.Close()
	}
	if c.Bool("cluster-enabled") {
		if _, _, ok := c.ReplicaOf(); ok {
			return &LoadError{Reason: "replicaof directive not allowed in cluster mode"}
		}
	}
	ld.readingFile = false
	return nil
}

// renameCommand validates a rename-command directive when the command table
// is known (LoadOptions.CommandExists).
func (ld *loader) renameCommand(from, to string) string {
	if ld.opts.CommandExists == nil {
		return ""
	}
	exists := func(name string) bool {
		k := strings.ToLower(name)
		return ld.added[k] || (!ld.removed[k] && ld.opts.CommandExists(k))
	}
	if !exists(from) {
		return "No such command in rename-command"
	}
	f := strings.ToLower(from)
	delete(ld.added, f)
	ld.removed[f] = true
	if to != "" {
		if exists(to) {
			return "Target command name already exists"
		}
		ld.added[strings.ToLower(to)] = true
	}
	return ""
}
