package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
)

// The hostile scenario measures what one client that respects nothing
// does to the others: ordinary clients ask for certificate-info for
// -duration alone (the baseline), then again while one hostile client, on
// hostileConns connections from one address, sends the most expensive
// chunks of events it can, as fast as it can, ignoring every 429 and its
// Retry-After. The target (the project's issue): the ordinary clients'
// p50 at most doubles.
//
// Both halves go to the handler the server mounts under defendedPrefix:
// the same service and store as the rest, with the rate limits and byte
// budgets at their defaults (the other scenarios turn them off), and the
// loopback trusted as a proxy, so that the hostile client's address is
// the one its X-Forwarded-For names, as behind a reverse proxy.
const (
	defendedPrefix = "/_defended"
	hostileConns   = 4
	hostileAddr    = "203.0.113.66" // TEST-NET-3: one address for every hostile connection
)

// hostileTally counts the hostile client's requests by outcome.
type hostileTally struct {
	ok, limited, other atomic.Int64 // answered 2xx, 429, anything else
	dropped            atomic.Int64 // the connection failed before an answer was read
	redials            atomic.Int64 // new connections after the server closed one
	sessions           atomic.Int64 // capture sessions started
	mu                 sync.Mutex
	codes              map[int]int // the statuses of other
}

func (t *hostileTally) count(code int) {
	switch {
	case code >= 200 && code < 300:
		t.ok.Add(1)
	case code == http.StatusTooManyRequests:
		t.limited.Add(1)
	default:
		t.other.Add(1)
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.codes == nil {
			t.codes = map[int]int{}
		}
		t.codes[code]++
	}
}

// hostileChunk is a shape of chunk the hostile client may send.
type hostileChunk struct {
	shape  string
	events []byte
	n      int           // events in it
	check  time.Duration // capture.CheckEvents on it, here (the fastest of 3)
}

// hostileChunks returns the candidate chunks, each of events as near to
// the service's largest chunk as it fits, that capture.CheckEvents
// accepts, the costliest to check first. The server costs each more than
// this (it scans the body again, and a body with \u escapes goes through
// encoding/json), but their order is what it is here.
func hostileChunks() []hostileChunk {
	limit := consentkit.DefaultMaxChunkBytes // the server runs with the default
	deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	shapes := []struct {
		name  string
		event func(i int) string
	}{
		{"many tiny events", func(i int) string {
			return `{"type":3,"data":{"source":1},"timestamp":` + strconv.Itoa(i) + `}`
		}},
		{"events nested 9,000 deep", func(i int) string {
			return `{"type":3,"timestamp":` + strconv.Itoa(i) + `,"data":` + deep + `}`
		}},
		// A member name with an escape is unescaped by encoding/json, one
		// call per name, and such a body misses the adapter's plain path.
		{"tiny events with escaped names", func(i int) string {
			return `{"typ\u0065":3,"timestam\u0070":` + strconv.Itoa(i%10) + `}`
		}},
	}
	var out []hostileChunk
	for _, s := range shapes {
		var b bytes.Buffer
		b.WriteByte('[')
		n := 0
		for ; ; n++ {
			e := s.event(n)
			if b.Len()+len(e)+2 > limit || n == 100_000 { // capture takes at most 100,000 events a chunk
				break
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(e)
		}
		b.WriteByte(']')
		c := hostileChunk{shape: s.name, events: b.Bytes(), n: n, check: time.Hour}
		if capture.CheckEvents(c.events) != nil {
			continue // the server would refuse it before the costly part
		}
		for range 3 {
			t0 := time.Now()
			_ = capture.CheckEvents(c.events)
			c.check = min(c.check, time.Since(t0))
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b hostileChunk) int { return int(b.check - a.check) })
	return out
}

// attack runs the hostile client until stop is closed: hostileConns
// connections, each recording a session of its own (another when one is
// full or closed), sending chunk after chunk, resending a refused one at
// once, dialling again whenever the server closes the connection.
func attack(fx *fixture, chunk []byte, stop <-chan struct{}, t *hostileTally) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range hostileConns {
		wg.Go(func() {
			h := &hostile{client: client{id: -1 - i, fx: fx, rng: rand.New(rand.NewPCG(0, uint64(i)))}, t: t, stop: stop}
			defer h.close()
			for !h.stopped() {
				if h.conn == nil && !h.dial() {
					continue
				}
				if h.session == "" {
					h.start()
					continue
				}
				// The request is made again only when its session or seq
				// changed: the attacker shares the machine with the server,
				// and copying a chunk for every refused resend would be
				// its own load, not the server's.
				if built := h.session + "/" + strconv.Itoa(h.seq); built != h.built {
					body := `{"seq":` + strconv.Itoa(h.seq) + `,"events":` + string(chunk) + `}`
					h.post(defendedPrefix+"/capture/sessions/"+h.session+"/events", body, "Origin: "+loadOrigin+"\r\n",
						"Authorization: Bearer "+h.upload+"\r\n", "X-Forwarded-For: "+hostileAddr+"\r\n")
					h.built = built
				}
				code, _ := h.send()
				switch {
				case code >= 200 && code < 300:
					h.seq++
				case code == http.StatusConflict || code == http.StatusRequestEntityTooLarge:
					h.session = "" // closed, out of step or full: record another
				}
				// 429 or no answer: the same chunk again, at once.
			}
		})
	}
	return &wg
}

// hostile is one of the hostile client's connections.
type hostile struct {
	client
	t     *hostileTally
	stop  <-chan struct{}
	built string // the session and seq of the chunk in req, "" when req holds another request
}

func (h *hostile) stopped() bool {
	select {
	case <-h.stop:
		return true
	default:
		return false
	}
}

func (h *hostile) dial() bool {
	conn, err := net.Dial("tcp", h.fx.Addr)
	if err != nil {
		h.t.dropped.Add(1)
		time.Sleep(time.Millisecond) // the machine is out of ports or the server gone: do not spin
		return false
	}
	h.conn, h.r = conn, bufio.NewReader(conn)
	return true
}

func (h *hostile) close() {
	if h.conn != nil {
		_ = h.conn.Close() // the attack is over, or the server closed it
		h.conn = nil
	}
}

// start starts a capture session, as the snippet does, from the hostile
// address; refused, it is tried again at once.
func (h *hostile) start() {
	h.post(defendedPrefix+"/capture/sessions", `{"property_id":"acme-web","url":"`+loadOrigin+`/quote"}`,
		"Origin: "+loadOrigin+"\r\n", "X-Forwarded-For: "+hostileAddr+"\r\n")
	h.built = ""
	code, body := h.send()
	if code != http.StatusCreated {
		return
	}
	var s struct {
		SessionID   string `json:"session_id"`
		UploadToken string `json:"upload_token"`
	}
	if json.Unmarshal(body, &s) == nil && s.SessionID != "" {
		h.session, h.upload, h.seq = s.SessionID, s.UploadToken, 0
		h.t.sessions.Add(1)
	}
}

// send sends h.req and counts the answer; it returns the status (0: none)
// and the body. A server that answers before reading the whole body (a
// 429 of the count of chunks) closes the connection while the chunk is
// being written: the answer may still be there to read. Whenever the
// connection ends, the next request dials again.
func (h *hostile) send() (int, []byte) {
	_ = h.conn.SetDeadline(time.Now().Add(10 * time.Second)) // a stuck server cannot hold the attack past its end for long
	_, werr := h.conn.Write(h.req)
	if werr != nil {
		_ = h.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		h.t.dropped.Add(1)
		h.close()
		h.t.redials.Add(1)
		return 0, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read to the end, or err says why not
	h.t.count(resp.StatusCode)
	if err != nil || werr != nil || resp.Close {
		h.close()
		h.t.redials.Add(1)
	}
	return resp.StatusCode, body
}

// hostileRun measures the baseline and the same clients under attack, and
// prints both rows and the ratio of their p50s.
func hostileRun(fx *fixture, known map[string]scenario, run loadRun, o options, chunks []hostileChunk, out io.Writer) error {
	sc := known["hostile"] // certificate-info, on the defended handler
	resetPeak(fx)
	own := cpuTime()
	base, bb, ba, err := measure(fx, sc, run.clients, o)
	if err != nil {
		return err
	}
	baseOwn := cpuTime() - own
	printRow(out, run.label+"/base", base, bb, ba)

	var t hostileTally
	stop := make(chan struct{})
	resetPeak(fx)
	before, err := serverStats(fx)
	if err != nil {
		return err
	}
	own = cpuTime()
	wg := attack(fx, chunks[0].events, stop, &t)
	under := drive(fx, sc, run.clients, o.duration, o.seed)
	close(stop)
	wg.Wait()
	underOwn := cpuTime() - own
	after, err := serverStats(fx)
	if err != nil {
		return err
	}
	printRow(out, run.label, under, before, after)

	b50, u50 := pct(base.latencies, 0.50), pct(under.latencies, 0.50)
	ratio := float64(u50) / float64(max(b50, 1))
	verdict := "met"
	if ratio > 2 {
		verdict = "NOT met"
	}
	fmt.Fprintf(out, "           certificate-info p50 under attack / baseline = %s / %s = %.2f× (target ≤ 2×: %s)\n", u50, b50, ratio, verdict)
	fmt.Fprintf(out, "           server busy %.2f cores at baseline, %.2f under attack (the row's cpu/req and allocs/req: all the server did, the attack included, per ordinary request);\n",
		cores(bb, ba, base.took), cores(before, after, under.took))
	fmt.Fprintf(out, "           this process (the clients, and the attacker, on the same machine) %.2f cores at baseline, %.2f under attack\n",
		float64(baseOwn)/float64(max(base.took, 1)), float64(underOwn)/float64(max(under.took, 1)))
	total := t.ok.Load() + t.limited.Load() + t.other.Load()
	fmt.Fprintf(out, "           hostile client, %d connections from %s: %d answered (%.0f/s): %d 2xx, %d 429, %d other",
		hostileConns, hostileAddr, total, float64(total)/under.took.Seconds(), t.ok.Load(), t.limited.Load(), t.other.Load())
	if len(t.codes) > 0 {
		fmt.Fprintf(out, " (%s)", codesText(t.codes))
	}
	fmt.Fprintf(out, "; %d unanswered (the connection ended first); %d new connections; %d sessions started\n",
		t.dropped.Load(), t.redials.Load(), t.sessions.Load())
	return nil
}

// printRow prints a scenario's row of figures and its failures.
func printRow(out io.Writer, label string, r result, before, after stats) {
	batch := "-"
	if calls := after.GroupCalls - before.GroupCalls; calls > 0 {
		batch = fmt.Sprintf("%.1f", float64(calls)/float64(after.GroupBatches-before.GroupBatches))
	}
	cpu, allocs := perRequest(r, before, after)
	fmt.Fprintf(out, "%-10s %9s %9s %9s %9s %9s %8s %10.0f %8dM %7s\n", label, rateText(r.rate()), pct(r.latencies, 0.50), pct(r.latencies, 0.99),
		pct(r.latencies, 0.999), pct(r.latencies, 1), cpu, allocs, after.PeakRSSKB>>10, batch)
	for f, k := range r.failures {
		fmt.Fprintf(out, "           failed %d×: %s\n", k, f)
	}
}

// cores is the server's processor time between before and after, in
// cores busy over took.
func cores(before, after stats, took time.Duration) float64 {
	return float64(after.CPU-before.CPU) / float64(max(took, 1))
}

// codesText prints statuses and their counts, by status.
func codesText(codes map[int]int) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%d×%d", codes[c], c))
	}
	return strings.Join(parts, ", ")
}
