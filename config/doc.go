// Package config implements shoal's configuration: the directive registry
// (every directive of Redis 7.0.15, with the same names, aliases, types,
// bounds, defaults and flags: 178 directives plus 19 aliases, of which 5 are
// hidden from CONFIG GET patterns), the parsing of redis.conf style files and
// of the server command line, and the logic of CONFIG GET, CONFIG SET,
// CONFIG RESETSTAT and CONFIG REWRITE, with Redis's exact error texts.
// A value that needs a feature shoal has not built (appendonly yes,
// maxmemory > 0, user, loadmodule, ...) is refused, at
// start-up on the final configuration and by CONFIG SET; the one table of
// those directives is config/unbuilt.go (docs/CONFIG.md shows it).
//
// There is no package-level mutable state: every Config (New or Load) has
// its own directive table, so many servers can run in one process.
//
// # Concurrency
//
// Every directive's value is an immutable snapshot behind an atomic pointer
// and the name table never changes after New, so all getters (Int, Bool,
// String, Strings, Get, the hot accessors such as MaxClients, and the
// closures returned by IntFunc/BoolFunc) are lock-free and safe to call from
// any goroutine, also while Set runs. Set and Rewrite are serialized by a
// mutex; change hooks (OnChange) run under it.
//
// # Command line
//
// Load mirrors redis-server's main(): "shoal-server [file.conf] [-]
// [--directive value ...]". The options --help, -h, --version, -v,
// --test-memory and --check-system are handled by the server binary before
// Load; they are not directives.
//
// # Deliberate differences from Redis 7.0.15
//
//   - dir: Redis chdir()s; a Go process hosting several servers can't, so dir
//     is validated like chdir() (same error texts) and stored as an absolute,
//     symlink-free path. Relative paths read later from the configuration
//     (include, logfile) are resolved against it, as they would be after
//     chdir(). The server must prefix its data files with String("dir").
//   - activedefrag can't be enabled (Redis's error for builds without
//     jemalloc, which is also what Debian's redis-server says).
//   - There is no sentinel mode: a lone "sentinel" line (or --sentinel) is
//     ignored, "sentinel <anything>" fails with "sentinel directive while not
//     in sentinel mode".
//   - "user" lines are kept for the server (validated when
//     LoadOptions.ValidateUser is given); rename-command lines are kept in
//     order (RenamedCommands, validated when LoadOptions.CommandExists is
//     given); the server applies both. loadmodule and module configs
//     ("mod.name value") are parsed but refused after the whole
//     configuration is read (config/unbuilt.go).
//   - Runtime side effects that Redis performs in its "apply" functions
//     (re-binding, resizing the backlog, setting the OOM score, TLS
//     reconfiguration, ...) are the server's hooks (OnChange); their
//     failures are reported with Redis's message format and roll back.
//     Hooks run once per changed directive (Redis dedupes apply functions).
//   - CONFIG GET replies in a stable order (names given exactly first, then
//     pattern matches alphabetically); Redis uses its hash table order.
//   - CONFIG REWRITE appends new lines in Redis's table order (Redis: hash
//     order), keeps "user" and "loadmodule" lines untouched unless a
//     provider is registered with SetRewriteLines (Redis regenerates them
//     from its ACL and module state), and writes memory values above 2^63
//     as unsigned numbers (Redis writes them as negative numbers it can't
//     read back).
package config
