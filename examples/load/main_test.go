package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/internal/teststore"
)

// TestMain serves as the load's server when the run starts this test
// binary again as one (startServer).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "load server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A short run of every scenario against each embedded store: every
// scenario is answered as it wants, at a rate above zero, and the ceilings
// and ratios are printed.
func TestEveryScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and drives it for a few seconds")
	}
	row := regexp.MustCompile(`(?m)^(\w+) +(\d+(?:\.\d+)?) `)
	for _, st := range []string{"memory", "sqlite", "postgres"} {
		t.Run(st, func(t *testing.T) {
			args := []string{"-store", st, "-scenario", "all", "-clients", "2", "-duration", "300ms",
				"-certs", "200", "-retain-sessions", "20000", "-rounds", "2"}
			if st == "postgres" {
				args = append(args, "-dsn", teststore.PostgresURL(t)) // skips when CONSENT_TEST_POSTGRES_URL is unset
			}
			var out bytes.Buffer
			err := run(t.Context(), args, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, &out)
			}
			got := map[string]float64{}
			for _, m := range row.FindAllStringSubmatch(out.String(), -1) {
				got[m[1]], _ = strconv.ParseFloat(m[2], 64)
			}
			for _, sc := range order {
				if got[sc] <= 0 {
					t.Errorf("scenario %s: no answers per second reported", sc)
				}
			}
			for _, want := range []string{"trivial net/http handler, req/s", "÷ trivial handler:", "server cpu/req, trivial ÷ match:",
				"round 1: trivial", "round 2: trivial", "medians of 2 rounds: match ÷ trivial handler", "(a match request costs ",
				"hostile chunks: ", "capture: server cpu per 16384-byte chunk ÷ trivial request = ", "certificate-info p50 under attack / baseline = ", "hostile client, 4 connections from "} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no %q in the report", want)
				}
			}
			if st == "sqlite" && (!strings.Contains(out.String(), "÷ bare SQLite debit loop:") ||
				!strings.Contains(out.String(), "match ÷ bare SQLite debit loop")) {
				t.Error("no ratio to the bare SQLite loop")
			}
			if st == "postgres" && !strings.Contains(out.String(), "÷ pgbench TPC-B:") && !strings.Contains(out.String(), "pgbench is not installed") {
				t.Error("neither a ratio to pgbench nor word that it is not installed")
			}
			// Running out of sessions to retain before the time is up is
			// no failure of the service.
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.Contains(line, "failed") && !strings.Contains(line, "ran out of preloaded sessions") {
					t.Errorf("not answered as wanted: %s", strings.TrimSpace(line))
				}
			}
			if t.Failed() {
				t.Logf("report:\n%s", &out)
			}
		})
	}
}
