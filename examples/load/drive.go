package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A scenario is one kind of request, sent by every client in a loop.
type scenario struct {
	name string
	// start prepares a client's state: the capture scenario starts a
	// recording session. Nil: none.
	start func(c *client) error
	// next writes the client's next request into c.req and returns the
	// status it wants, or exhausted when it has none left to write.
	next func(c *client) (want int)
}

// client is one connection's worth of load. It speaks HTTP/1.1 on a
// connection of its own with requests written by hand, so that the load
// costs the machine far less than the server does: a net/http client
// would leave the server little of a two-core machine.
type client struct {
	id   int
	fx   *fixture
	rng  *rand.Rand
	conn net.Conn
	r    *bufio.Reader
	req  []byte // the request being sent
	// capture: the session being recorded, its upload token, the next seq.
	session, upload string
	seq             int
}

// post writes a POST of body to path into c.req, with the fixture's token
// unless header gives other headers ("Name: value\r\n" each).
func (c *client) post(path, body string, header ...string) {
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: load\r\nContent-Type: application/json\r\n"...)
	if header == nil {
		c.req = append(append(append(c.req, "Authorization: Bearer "...), c.fx.Token...), "\r\n"...)
	}
	for _, h := range header {
		c.req = append(c.req, h...)
	}
	c.req = strconv.AppendInt(append(c.req, "Content-Length: "...), int64(len(body)), 10)
	c.req = append(append(c.req, "\r\n\r\n"...), body...)
}

// do sends c.req and reads the answer's status, discarding its body.
func (c *client) do() (int, error) {
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // drained: nothing is left to fail
	return resp.StatusCode, err
}

// exhausted is what a scenario's next returns when it has nothing left to
// send: retain and batch once every preloaded session was handed out (a
// batch of sessions that do not exist would still be answered 200, and be
// measured as if it had retained them).
const exhausted = -1

func scenarios(o options) map[string]scenario {
	cert := func(c *client) string { return c.fx.Certs[c.rng.IntN(len(c.fx.Certs))] }
	chunk := events(o.chunkBytes)
	return map[string]scenario{
		"match": {name: "match", next: func(c *client) int {
			c.post("/verify/match", `{"certificate_id":"`+cert(c)+`","company_id":"acme","consent":"`+consentText+`"}`)
			return 200
		}},
		"partial": {name: "partial", next: func(c *client) int {
			c.post("/verify/partial-match", `{"certificate_id":"`+cert(c)+`","company_id":"acme","term":"contacted"}`)
			return 200
		}},
		"info": {name: "info", next: func(c *client) int {
			c.post("/verify/certificate-info", `{"certificate_id":"`+cert(c)+`","company_id":"acme","property_id":"acme-web"}`)
			return 200
		}},
		// hostile: certificate-info on the handler with the rate limits
		// and budgets on, which the hostile client attacks (hostile.go).
		"hostile": {name: "hostile", next: func(c *client) int {
			c.post(defendedPrefix+"/verify/certificate-info", `{"certificate_id":"`+cert(c)+`","company_id":"acme","property_id":"acme-web"}`)
			return 200
		}},
		"retain": {name: "retain", next: func(c *client) int {
			i := c.fx.retained.Add(1) - 1
			if i >= int64(c.fx.RetainSessions) {
				return exhausted
			}
			c.post("/api/integrations/acme/retain/rs-"+strconv.FormatInt(i, 10), "")
			return 200
		}},
		"batch": {name: "batch", next: func(c *client) int {
			first := c.fx.retained.Add(100) - 100
			if first+100 > int64(c.fx.RetainSessions) {
				return exhausted
			}
			var b strings.Builder
			b.WriteString(`{"session_ids":[`)
			for i := range int64(100) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"rs-` + strconv.FormatInt(first+i, 10) + `"`)
			}
			b.WriteString(`]}`)
			c.post("/api/integrations/acme/retain/batch", b.String())
			return 200
		}},
		"optout": {name: "optout", next: func(c *client) int {
			c.post("/opt-out", `{"company_id":"acme","email":"lead`+strconv.Itoa(c.rng.IntN(c.fx.CertCount))+`@example.com"}`, "")
			return 200
		}},
		"capture": {name: "capture", start: startCapture, next: func(c *client) int {
			if c.seq*len(chunk) > 60<<20 { // a session holds up to 64 MiB (D34): start another
				if err := startCapture(c); err != nil {
					return 0
				}
			}
			body := `{"seq":` + strconv.Itoa(c.seq) + `,"events":` + string(chunk) + `}`
			c.seq++
			c.post("/capture/sessions/"+c.session+"/events", body, "Origin: "+loadOrigin+"\r\n", "Authorization: Bearer "+c.upload+"\r\n")
			return 200
		}},
		"trivial": {name: "trivial handler", next: func(c *client) int {
			c.post("/_load/trivial", `{"certificate_id":"`+cert(c)+`","company_id":"acme","consent":"`+consentText+`"}`)
			return 200
		}},
	}
}

// startCapture starts a recording session for c, as the snippet does.
func startCapture(c *client) error {
	c.post("/capture/sessions", `{"property_id":"acme-web","url":"`+loadOrigin+`/quote"}`, "Origin: "+loadOrigin+"\r\n")
	if _, err := c.conn.Write(c.req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below, or err says why not
	if resp.StatusCode != 201 {
		return fmt.Errorf("start a capture session: status %d", resp.StatusCode)
	}
	var s struct {
		SessionID   string `json:"session_id"`
		UploadToken string `json:"upload_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return err
	}
	// The rest of the body too: the connection carries the next request.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	c.session, c.upload, c.seq = s.SessionID, s.UploadToken, 0
	return nil
}

// result is one scenario's run.
type result struct {
	latencies []time.Duration // of the answers as wanted, sorted
	failures  map[string]int
	took      time.Duration
}

func (r result) rate() float64 { return float64(len(r.latencies)) / r.took.Seconds() }

// drive runs sc with clients connections for d and returns what they got.
func drive(fx *fixture, sc scenario, clients int, d time.Duration, seed uint64) result {
	var (
		got samples
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		wg.Go(func() {
			conn, err := net.Dial("tcp", fx.Addr)
			if err != nil {
				got.fail(err.Error())
				return
			}
			defer func() { _ = conn.Close() }() // each request's failure is counted by itself
			c := &client{id: i, fx: fx, rng: rand.New(rand.NewPCG(seed, uint64(i))), conn: conn, r: bufio.NewReader(conn)}
			if sc.start != nil {
				if err := sc.start(c); err != nil {
					got.fail(err.Error())
					return
				}
			}
			// Every client asks at least once, however late it got here: a
			// machine slow to dial still gets a rate, never none.
			for first := true; first || time.Now().Before(deadline); first = false {
				want := sc.next(c)
				if want == exhausted {
					got.fail("ran out of preloaded sessions before the time was up (raise -retain-sessions); the rate is over the time until then")
					return
				}
				if want == 0 {
					got.fail("could not make a request")
					return
				}
				t0 := time.Now()
				code, err := c.do()
				got.add(code, want, err, time.Since(t0))
				if err != nil {
					return // the connection is no longer usable
				}
			}
		})
	}
	wg.Wait()
	lat, failures := got.result()
	return result{latencies: lat, failures: failures, took: time.Since(start)}
}

// serverStats reads the server's statistics.
func serverStats(fx *fixture) (stats, error) {
	var s stats
	resp, err := http.Get("http://" + fx.Addr + "/_load/stats")
	if err != nil {
		return s, err
	}
	defer func() { _ = resp.Body.Close() }() // Decode says whether it was read
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// perRequest is the server's processor time and allocations per answered
// request of r, from its statistics before and after r.
func perRequest(r result, before, after stats) (time.Duration, float64) {
	answered := len(r.latencies)
	for _, k := range r.failures {
		answered += k
	}
	per := float64(max(answered, 1))
	return time.Duration(float64(after.CPU-before.CPU) / per).Round(time.Microsecond), float64(after.Mallocs-before.Mallocs) / per
}

// resetPeak starts the server's peak memory afresh.
func resetPeak(fx *fixture) {
	if resp, err := http.Post("http://"+fx.Addr+"/_load/reset-peak", "", nil); err == nil {
		_ = resp.Body.Close() // an empty answer
	}
}
