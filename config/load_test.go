package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestParseCommandLine(t *testing.T) {
	wd := currentDir()
	tests := []struct {
		args    []string
		file    string // "" = none
		stdin   bool
		options string
	}{
		{[]string{"--port", "6380"}, "", false, `port "6380" `},
		{[]string{"--port", "6380", "--bind", "a", "b"}, "", false, "port \"6380\" \nbind \"a\" \"b\" "},
		{[]string{"/etc/r.conf", "--port", "1"}, "/etc/r.conf", false, `port "1" `},
		{[]string{"r.conf"}, wd + "/r.conf", false, ""},
		{[]string{" /x.conf "}, "/x.conf", false, ""},
		{[]string{"-"}, "", true, ""},
		{[]string{"-", "--port", "1"}, "", true, `port "1" `},
		{[]string{"f.conf", "--port", "1", "-"}, wd + "/f.conf", true, `port "1" `},
		{[]string{"--port", "-", "--x"}, "", false, "port \"-\" \nx "},
		{[]string{"--save", ""}, "", false, `save "" `},
		{[]string{"--save"}, "", false, `save ""`},
		{[]string{"--save", "--port", "1"}, "", false, "save \"\"\nport \"1\" "},
		{[]string{"--port", "--save"}, "", false, `port "--save" `},
		{[]string{"--foo", "--bar"}, "", false, `foo "--bar" `},
		{[]string{"--port 6380", "--x 1"}, "", false, "port 6380 \nx 1 "},
		{[]string{"--sentinel", "--port", "1"}, "", false, "sentinel \nport \"1\" "},
		{[]string{"--requirepass", "a \"b\"\n"}, "", false, `requirepass "a \"b\"\n" `},
		{[]string{"--list-max-ziplist-size", "-2"}, "", false, `list-max-ziplist-size "-2" `},
		{[]string{"--"}, "", false, " "},
	}
	for _, tt := range tests {
		file, stdin, options := parseCommandLine(tt.args)
		if tt.file == "" {
			assert.Nil(t, file, "%q", tt.args)
		} else if assert.NotNil(t, file, "%q", tt.args) {
			assert.Equal(t, tt.file, *file, "%q", tt.args)
		}
		assert.Equal(t, tt.stdin, stdin, "%q", tt.args)
		assert.Equal(t, tt.options, options, "%q", tt.args)
	}
	assert.Equal(t, "/a/b", absolutePath("/a/b"))
	parent := filepath.Dir(wd)
	if parent != "/" {
		parent += "/"
	}
	assert.Equal(t, parent+"x.conf", absolutePath("../x.conf"))
}

func TestLoadErrorText(t *testing.T) {
	e := &LoadError{Line: 2, Text: "foo bar", Reason: "Bad directive or wrong number of arguments"}
	assert.Equal(t, "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"+
		"Reading the configuration file, at line 2\n>>> 'foo bar'\n"+
		"Bad directive or wrong number of arguments\n", e.Error())
	e = &LoadError{Reason: "replicaof directive not allowed in cluster mode"}
	assert.Equal(t, "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nreplicaof directive not allowed in cluster mode\n", e.Error())
}

func loadErr(t *testing.T, args ...string) *LoadError {
	t.Helper()
	_, err := loadParsing(args)
	require.Error(t, err, "%q", args)
	le, ok := err.(*LoadError)
	require.True(t, ok, "%T", err)
	return le
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args   []string
		line   int
		text   string
		reason string
	}{
		{[]string{"--foo", "bar"}, 2, `foo "bar"`, "Bad directive or wrong number of arguments"},
		{[]string{"--port"}, 2, "port", "wrong number of arguments"},
		{[]string{"--port", "1", "2"}, 2, `port "1" "2"`, "wrong number of arguments"},
		{[]string{"--port", "1", "--daemonize", "maybe"}, 3, `daemonize "maybe"`, "argument must be 'yes' or 'no'"},
		{[]string{"--port", "99999"}, 2, `port "99999"`, "argument must be between 0 and 65535 inclusive"},
		{[]string{"--maxmemory", "abc"}, 2, `maxmemory "abc"`, "argument must be a memory value"},
		{[]string{"--loglevel", "foo"}, 2, `loglevel "foo"`, "argument(s) must be one of the following: debug, verbose, notice, warning"},
		{[]string{"--save", "1"}, 2, `save "1"`, "Invalid save parameters"},
		{[]string{"--include"}, 2, "include", "Bad directive or wrong number of arguments"},
		{[]string{"--rename-command", "a"}, 2, `rename-command "a"`, "Bad directive or wrong number of arguments"},
		{[]string{"--user"}, 2, "user", "Bad directive or wrong number of arguments"},
		{[]string{"--mod.opt"}, 2, "mod.opt", "Module config specified without value"},
		{[]string{"--sentinel", "monitor"}, 2, `sentinel "monitor"`, "sentinel directive while not in sentinel mode"},
		{[]string{"--lua-replicate-commands", "yes", "no"}, 2, `lua-replicate-commands "yes" "no"`, "Bad directive or wrong number of arguments"},
	}
	for _, tt := range tests {
		le := loadErr(t, tt.args...)
		assert.Equal(t, tt.line, le.Line, "%q", tt.args)
		assert.Equal(t, tt.text, le.Text, "%q", tt.args)
		assert.Equal(t, tt.reason, le.Reason, "%q", tt.args)
	}

	le := loadErr(t, filepath.Join(dir, "missing.conf"))
	assert.True(t, le.OpenFailure)
	assert.Equal(t, "Fatal error, can't open config file '"+filepath.Join(dir, "missing.conf")+
		"': No such file or directory", le.Error())

	f := writeFile(t, dir, "quotes.conf", "# c\n\nport 1\nfoo \"bar\n")
	le = loadErr(t, f, "--port", "2")
	assert.Equal(t, 4, le.Line)
	assert.Equal(t, `foo "bar`, le.Text)
	assert.Equal(t, "Unbalanced quotes in configuration line", le.Reason)

	f = writeFile(t, dir, "ok.conf", "port 1\n")
	le = loadErr(t, f, "--hz", "x")
	assert.Equal(t, 3, le.Line, "the options come after the file content and a newline")

	le = loadErr(t, "--cluster-enabled", "yes", "--replicaof", "1.2.3.4", "5")
	assert.Equal(t, 0, le.Line)
	assert.Equal(t, "replicaof directive not allowed in cluster mode", le.Reason)

	le = loadErr(t, "--logfile", filepath.Join(dir, "nodir", "x.log"))
	assert.Equal(t, "Can't open the log file: No such file or directory", le.Reason)
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "conf.d"), 0o755))
	writeFile(t, dir, "conf.d/a.conf", "maxmemory 1mb\n")
	writeFile(t, dir, "conf.d/b.conf", "maxmemory 2mb\nhz 20\n")
	writeFile(t, dir, "rel.conf", "save 7 7\n")
	main := writeFile(t, dir, "main.conf", strings.Join([]string{
		"# comment",
		"  # indented comment",
		"",
		"PORT 7000",
		"save 100 1",
		"save 200 2",
		"dir " + dir,
		"include rel.conf", // relative to dir
		"include conf.d/*.conf",
		"include nothing/*.conf", // no match: ignored
		"  slave-priority   5   ",
		`bind "127.0.0.1 10.0.0.1"`,
		`requirepass "p\x41ss word"`,
		"list-max-ziplist-entries 512",
		"rename-command CONFIG \"\"",
		"rename-command DEBUG mydebug",
		"user alice on >pw ~*",
		"loadmodule /x/y.so arg1 arg2",
		"mymod.opt a b",
		"mymod.opt c",
		"other.x 1",
		"sentinel",
		"logfile log.txt",
		"\t\r",
	}, "\n"))
	c, err := loadParsing([]string{main, "--save", "300", "3", "--maxclients", "100"})
	require.NoError(t, err)
	assert.Equal(t, main, c.ConfigFile())
	assert.Equal(t, "7000", c.String("port"))
	// 100 1 and 200 2 accumulate; after an include Redis stops accumulating
	// (reading_config_file is reset), so later save lines replace the list.
	assert.Equal(t, "300 3", c.String("save"))
	assert.Equal(t, real, c.String("dir"))
	assert.Equal(t, "2097152", c.String("maxmemory"))
	assert.Equal(t, "20", c.String("hz"))
	assert.Equal(t, "5", c.String("replica-priority"))
	assert.Equal(t, []string{"127.0.0.1", "10.0.0.1"}, c.Strings("bind"))
	assert.Equal(t, "pAss word", c.String("requirepass"))
	assert.Equal(t, "100", c.String("maxclients"))
	assert.Equal(t, [][2]string{{"CONFIG", ""}, {"DEBUG", "mydebug"}}, c.RenamedCommands())
	assert.Equal(t, [][]string{{"alice", "on", ">pw", "~*"}}, c.Users())
	assert.Equal(t, [][]string{{"/x/y.so", "arg1", "arg2"}}, c.LoadModules())
	assert.Equal(t, [][2]string{{"mymod.opt", "c"}, {"other.x", "1"}}, c.ModuleConfigs())
	assert.Equal(t, "log.txt", c.String("logfile"))
	_, err = os.Stat(filepath.Join(dir, "log.txt"))
	assert.NoError(t, err, "the log file is created (relative to dir) like Redis does")

	// Without includes, every save line of the file and of the options accumulates.
	f := writeFile(t, dir, "saves.conf", "save 100 1\nsave 200 2\n")
	c, err = loadParsing([]string{f, "--save", "300 3"})
	require.NoError(t, err)
	assert.Equal(t, "100 1 200 2 300 3", c.String("save"))
	c, err = loadParsing([]string{f, "--save", ""})
	require.NoError(t, err)
	assert.Equal(t, "", c.String("save"))
	c, err = loadParsing([]string{"--save", "", "--save", "5 5"})
	require.NoError(t, err)
	assert.Equal(t, "5 5", c.String("save"))
	c, err = loadParsing([]string{"--save"})
	require.NoError(t, err)
	assert.Equal(t, "", c.String("save"))

	// A directory opens fine and reads as empty, like fopen()+fgets().
	c, err = loadParsing([]string{dir, "--port", "1"})
	require.NoError(t, err)
	assert.Equal(t, "1", c.String("port"))

	// An included file's errors report the included file's line.
	bad := writeFile(t, dir, "bad.conf", "hz 1\nhz x\n")
	le := loadErr(t, "--include", bad)
	assert.Equal(t, 2, le.Line)
	assert.Equal(t, "hz x", le.Text)
}

func TestLoadStdin(t *testing.T) {
	c, err := LoadWith([]string{"-", "--port", "2"}, LoadOptions{acceptUnbuilt: true, Stdin: strings.NewReader("port 1\nhz 50\n")})
	require.NoError(t, err)
	assert.Equal(t, "2", c.String("port"))
	assert.Equal(t, "50", c.String("hz"))

	dir := t.TempDir()
	f := writeFile(t, dir, "f.conf", "port 1")
	// stdin is appended right after the file content, without a newline.
	_, err = LoadWith([]string{f, "-"}, LoadOptions{acceptUnbuilt: true, Stdin: strings.NewReader("0\n")})
	require.NoError(t, err)
	c, _ = LoadWith([]string{f, "-"}, LoadOptions{acceptUnbuilt: true, Stdin: strings.NewReader("0\n")})
	assert.Equal(t, "10", c.String("port"))
}

func TestRenameCommandValidation(t *testing.T) {
	cmds := map[string]bool{"get": true, "set": true, "config": true}
	opts := LoadOptions{acceptUnbuilt: true, CommandExists: func(n string) bool { return cmds[n] }}
	_, err := LoadWith([]string{"--rename-command", "GET", "get2", "--rename-command", "get2", "get3"}, opts)
	require.NoError(t, err)
	_, err = LoadWith([]string{"--rename-command", "nosuch", "x"}, opts)
	require.Error(t, err)
	assert.Equal(t, "No such command in rename-command", err.(*LoadError).Reason)
	_, err = LoadWith([]string{"--rename-command", "get", "set"}, opts)
	assert.Equal(t, "Target command name already exists", err.(*LoadError).Reason)
	_, err = LoadWith([]string{"--rename-command", "get", "", "--rename-command", "get", "x"}, opts)
	assert.Equal(t, "No such command in rename-command", err.(*LoadError).Reason)
	c, err := loadParsing([]string{"--rename-command", "anything", "x"})
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"anything", "x"}}, c.RenamedCommands())
}

func TestValidateUser(t *testing.T) {
	opts := LoadOptions{acceptUnbuilt: true, ValidateUser: func(args []string) (string, error) {
		for _, a := range args[1:] {
			if a != "on" && a != "off" {
				return a, errors.New("Syntax error")
			}
		}
		return "", nil
	}}
	c, err := LoadWith([]string{"--user", "bob", "on"}, opts)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"bob", "on"}}, c.Users())
	_, err = LoadWith([]string{"--user", "bob", "on", "bad"}, opts)
	require.Error(t, err)
	assert.Equal(t, "Error in user declaration 'bad': Syntax error", err.(*LoadError).Reason)
}

func TestLoadNoArgs(t *testing.T) {
	c, err := loadParsing(nil)
	require.NoError(t, err)
	assert.Equal(t, "6379", c.String("port"))
	assert.Equal(t, "", c.ConfigFile())
}
