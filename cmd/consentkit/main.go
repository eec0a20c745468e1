// Command consentkit operates a consentkit service from the command line:
// companies, properties and their allowed origins, tokens, the wallet and
// its ledger, certificates, sessions, revocations, webhooks, the audit log
// and the check of its chain.
//
//	export CONSENTKIT_URL=http://127.0.0.1:8080 CONSENTKIT_OPERATOR_SECRET=…
//	consentkit companies create -id acme -name "Acme Insurance"
//	consentkit tokens issue -company acme -retention
//	consentkit wallet topup -company acme -amount 25.50 -reference inv-7
//	consentkit certificates find -company acme -email jane@example.com
//	consentkit audit tail -company acme -f
//	consentkit audit verify -company acme -all
//
// It works through one of two backends, chosen per call:
//
//   - -url (or $CONSENTKIT_URL): the operator API of a running server
//     (httpadapter's Handler.Operator, which examples/server serves under
//     /operator/), authenticated by the operator secret. The secret is read
//     from $CONSENTKIT_OPERATOR_SECRET or from the file named by
//     -secret-file, never from a flag's value, which the process list
//     would show to every user of the machine.
//   - -dsn (or $CONSENTKIT_DSN): the database itself, a SQLite file path or
//     a postgres:// URL. The command serves the operator API's handler in
//     its own process over that store and sends it the same requests, so
//     both backends validate alike, answer the same JSON, write the same
//     audit entries (actor "operator", D42) and scope an Idempotency-Key
//     alike (D40): a top-up whose answer was lost may be retried with its
//     key through either backend and credits once. A database is never
//     migrated implicitly: a missing or unmigrated one is refused, and
//     "consentkit migrate -dsn …" creates or upgrades it.
//
// Output is aligned text; -json prints the operator API's JSON answer as it
// came (audit tail prints one JSON entry per line). Money is an exact
// decimal number of dollars (D1), times RFC 3339 in UTC. Exit status: 0
// done, 1 refused or failed, 2 a usage error. Every command has -h.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/consentkit/consentkit/consent"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Environment variables read by the command.
const (
	URLEnv     = "CONSENTKIT_URL"
	DSNEnv     = "CONSENTKIT_DSN"
	SecretEnv  = "CONSENTKIT_OPERATOR_SECRET" // as examples/server reads it
	CompanyEnv = "CONSENTKIT_COMPANY"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// cli is one invocation's surroundings: where it writes, what it reads from
// the environment, how it opens a store and what time it is.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// openStore opens the store of a DSN for the direct backend, refusing
	// one that is missing or not migrated; close releases it. Tests hand
	// in a store of their own (a memory store has no DSN).
	openStore func(ctx context.Context, dsn string) (st consent.Store, close func() error, err error)
	// now is the clock of the direct backend's Service and of relative
	// expiry times; nil: time.Now.
	now func() time.Time
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: getenv, openStore: openStore}
	return c.run(ctx, args)
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.usage(c.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" { // help GROUP [COMMAND]: that one's help
			return c.run(ctx, append(slices.Clone(args[1:]), "-h"))
		}
		c.usage(c.stdout)
		return exitOK
	}
	group := args[0]
	cmds := commandsOf(group)
	if len(cmds) == 0 {
		fmt.Fprintf(c.stderr, "consentkit: no command %q; run consentkit -h for the list\n", group)
		return exitUsage
	}
	if len(cmds) == 1 && cmds[0].name == "" { // a command without a second word: migrate
		return c.runCommand(ctx, cmds[0], args[1:])
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		help := len(args) >= 2 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help")
		w := c.stderr
		if help {
			w = c.stdout
		}
		fmt.Fprintf(w, "usage: consentkit %s COMMAND [flags]\n\nCommands:\n", group)
		c.list(w, cmds)
		fmt.Fprintf(w, "\nRun consentkit %s COMMAND -h for a command's flags.\n", group)
		if help {
			return exitOK
		}
		return exitUsage
	}
	for _, cmd := range cmds {
		if cmd.name == args[1] {
			return c.runCommand(ctx, cmd, args[2:])
		}
	}
	fmt.Fprintf(c.stderr, "consentkit %s: no command %q; run consentkit %s -h for the list\n", group, args[1], group)
	return exitUsage
}

// usage writes the overview: what the command does and every command.
func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `usage: consentkit GROUP COMMAND [flags] [arguments]

Operates a consentkit service: through its operator API (-url, or $`+URLEnv+`,
with the secret in $`+SecretEnv+` or -secret-file) or directly on its
database (-dsn, or $`+DSNEnv+`: a SQLite file or a postgres:// URL).

Commands:
`)
	c.list(w, commands)
	fmt.Fprint(w, `
Flags of every command: -url, -dsn, -secret-file, -json (the API's JSON
answer), -timeout; -company (default $`+CompanyEnv+`) where a company is meant.
Run consentkit GROUP COMMAND -h for a command's flags. Exit status: 0 done,
1 refused or failed, 2 a usage error.
`)
}

func (c *cli) list(w io.Writer, cmds []*command) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cmd := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.title(), cmd.summary)
	}
	tw.Flush()
}

// common are the flags every command takes.
type common struct {
	url, dsn, secretFile string
	json                 bool
	timeout              time.Duration
	company              string
}

// runCommand parses the command's flags and arguments, connects the
// backend and runs the command.
func (c *cli) runCommand(ctx context.Context, cmd *command, args []string) int {
	fs := flag.NewFlagSet("consentkit "+cmd.title(), flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are written below
	var o common
	if !cmd.local {
		fs.StringVar(&o.url, "url", "", "base `URL` of a server whose operator API is under /operator/ (default $"+URLEnv+")")
		fs.StringVar(&o.secretFile, "secret-file", "", "`file` holding the operator secret, for -url (default: $"+SecretEnv+")")
		fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long one request may take")
	}
	fs.StringVar(&o.dsn, "dsn", "", "the database: a SQLite file `path`, or a postgres:// URL (default $"+DSNEnv+")")
	fs.BoolVar(&o.json, "json", false, "print the operator API's JSON answer")
	if cmd.company {
		fs.StringVar(&o.company, "company", "", "the company's `id` (default $"+CompanyEnv+")")
	}
	act := cmd.setup(fs)
	positional, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(c.stdout, cmd, fs)
		return exitOK
	}
	if err == nil && (len(positional) < cmd.minArgs() || len(positional) > len(cmd.args)) {
		switch {
		case len(cmd.args) == 0:
			err = usagef("unexpected arguments %q", positional)
		case len(positional) < cmd.minArgs():
			err = usagef("missing %s", strings.Join(cmd.args[len(positional):cmd.minArgs()], " "))
		default:
			err = usagef("unexpected arguments %q", positional[len(cmd.args):])
		}
	}
	if err == nil && cmd.company {
		if o.company == "" {
			o.company = c.getenv(CompanyEnv)
		}
		if o.company == "" {
			err = usagef("-company is required (or $%s)", CompanyEnv)
		} else if !consent.ValidID(o.company) {
			err = usagef("-company %q is not an id: 1 to 128 characters of A-Z a-z 0-9 . _ : -", o.company)
		}
	}
	if err == nil {
		// The backend connects at the first request, so that a command
		// line's mistakes are told before any connection is tried.
		k := &call{cli: c, cmd: cmd, opts: o, company: o.company, json: o.json, args: positional}
		err = act(ctx, k)
		if k.close != nil {
			if cerr := k.close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}
	return c.report(cmd, err)
}

// report writes err as one line and returns the exit status.
func (c *cli) report(cmd *command, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var fe flagError
	if errors.As(err, &ue) || errors.As(err, &fe) {
		fmt.Fprintf(c.stderr, "consentkit %s: %v\nusage: %s\nRun consentkit %s -h for help.\n", cmd.title(), err, cmd.usageLine(), cmd.title())
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "consentkit %s: %v\n", cmd.title(), err)
	return exitFailed
}

// flagError is the flag package's complaint about the command line.
type flagError struct{ error }

// parse parses flags and positional arguments in any order ("revoke TOKEN
// -company acme" as well as "revoke -company acme TOKEN"); after "--"
// everything is positional.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError{err}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// help writes a command's usage line, what it does and its flags.
func (c *cli) help(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", cmd.usageLine(), cmd.summary)
	if cmd.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.about))
	}
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// command is one command of the table below.
type command struct {
	group, name string
	// args names the positional arguments; a name in brackets is
	// optional.
	args    []string
	summary string
	about   string // more, for -h
	company bool   // takes -company
	local   bool   // works on a DSN only, without the operator API: migrate
	// setup declares the command's own flags and returns what it does.
	setup func(fs *flag.FlagSet) action
}

type action func(ctx context.Context, c *call) error

func (cmd *command) title() string {
	return strings.TrimSpace(cmd.group + " " + cmd.name)
}

func (cmd *command) minArgs() int {
	n := 0
	for _, a := range cmd.args {
		if !strings.HasPrefix(a, "[") {
			n++
		}
	}
	return n
}

func (cmd *command) usageLine() string {
	s := "consentkit " + cmd.title()
	if cmd.company {
		s += " -company ID"
	}
	s += " [flags]"
	for _, a := range cmd.args {
		s += " " + a
	}
	return s
}

func commandsOf(group string) []*command {
	var out []*command
	for _, cmd := range commands {
		if cmd.group == group {
			out = append(out, cmd)
		}
	}
	return out
}
