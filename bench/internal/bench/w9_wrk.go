package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// W9 with wrk: `wrk -t2 -c HTTPConns -d HTTPDuration --latency`, whose
// summary gives the requests done, requests/s, the latency percentiles
// and the errors. wrk checks no body; the probe request did, and the
// bytes wrk read must fit that many responses of the body's size.

// wrkThreads is wrk's -t: its threads (at most one per connection).
const wrkThreads = 2

// The bytes a W9 response may have besides its body: at least a status
// line and the blank line, at most what no header of these servers nears.
const (
	minResponseOverhead = len("HTTP/1.1 200 OK\r\n\r\n")
	maxResponseOverhead = 1024
)

// wrkReport is what parseWrk reads from wrk's output.
type wrkReport struct {
	Requests  int64   // "N requests in ..."
	ReqPerSec float64 // "Requests/sec:"
	// Bytes read, as printed ("1.27GB"), and half a unit of its last
	// digit: the true figure is within BytesRead ± BytesSlack.
	BytesRead, BytesSlack float64
	P50, P99, Max         time.Duration // the distribution's 50% and 99%, the thread stats' max
	Non2xx                int64         // "Non-2xx or 3xx responses:"
	SocketErrors          int64         // connect + read + write + timeout
}

// runWrk runs env.Wrk against the server at addr and parses its output.
func runWrk(env *Env, addr string) (wrkReport, error) {
	s := env.Sizes
	args := []string{
		"-t", strconv.Itoa(min(wrkThreads, s.HTTPConns)),
		"-c", strconv.Itoa(s.HTTPConns),
		"-d", strconv.Itoa(int(s.HTTPDuration/time.Second)) + "s",
		"--latency",
		"http://" + addr + "/",
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.HTTPDuration+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Wrk, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, env.Log
	if err := cmd.Run(); err != nil {
		return wrkReport{}, fmt.Errorf("bench: %s %s: %w\n%s", env.Wrk, strings.Join(args, " "), err, out.String())
	}
	r, err := parseWrk(out.String())
	if err != nil {
		return wrkReport{}, fmt.Errorf("bench: %s %s: %w\n%s", env.Wrk, strings.Join(args, " "), err, out.String())
	}
	return r, nil
}

// ErrWrkOutput is wrapped by parseWrk's errors: wrk printed something
// other than the summary it prints with --latency.
var ErrWrkOutput = errors.New("unexpected wrk output")

// parseWrk reads the summary wrk prints with --latency.
func parseWrk(out string) (wrkReport, error) {
	var r wrkReport
	var haveRequests, haveRate, haveP50, haveP99, haveMax bool
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var err error
		switch {
		case f[0] == "Latency" && len(f) == 5: // Latency avg stdev max +/-stdev
			r.Max, err = parseWrkTime(f[3])
			haveMax = true
		case f[0] == "50%" && len(f) == 2:
			r.P50, err = parseWrkTime(f[1])
			haveP50 = true
		case f[0] == "99%" && len(f) == 2:
			r.P99, err = parseWrkTime(f[1])
			haveP99 = true
		case len(f) == 6 && f[1] == "requests" && f[2] == "in" && f[5] == "read":
			// 82795 requests in 2.01s, 1.27GB read
			if r.Requests, err = strconv.ParseInt(f[0], 10, 64); err == nil {
				r.BytesRead, r.BytesSlack, err = parseWrkBytes(f[4])
			}
			haveRequests = true
		case f[0] == "Requests/sec:" && len(f) == 2:
			r.ReqPerSec, err = strconv.ParseFloat(f[1], 64)
			haveRate = true
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			// Socket errors: connect 0, read 41, write 0, timeout 0
			var c, rd, wr, to int64
			if _, serr := fmt.Sscanf(strings.TrimSpace(line), "Socket errors: connect %d, read %d, write %d, timeout %d", &c, &rd, &wr, &to); serr != nil {
				err = serr
			}
			r.SocketErrors = c + rd + wr + to
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			r.Non2xx, err = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
		if err != nil {
			return wrkReport{}, fmt.Errorf("%w: line %q: %w", ErrWrkOutput, strings.TrimSpace(line), err)
		}
	}
	var missing []string
	for _, m := range []struct {
		have bool
		what string
	}{
		{haveRequests, "the requests line"}, {haveRate, "Requests/sec"}, {haveMax, "the latency stats"},
		{haveP50, "the 50% latency"}, {haveP99, "the 99% latency (was --latency given?)"},
	} {
		if !m.have {
			missing = append(missing, m.what)
		}
	}
	if missing != nil {
		return wrkReport{}, fmt.Errorf("%w: no %s", ErrWrkOutput, strings.Join(missing, ", "))
	}
	return r, nil
}

// parseWrkTime parses a duration as wrk prints it: "501.00us", "1.50ms",
// "2.01s", "1.00m", "1.00h".
func parseWrkTime(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("duration %q", s)
			}
			return time.Duration(math.Round(v * float64(u.unit))), nil
		}
	}
	return 0, fmt.Errorf("duration %q", s)
}

// parseWrkBytes parses a byte count as wrk prints it, with binary units
// and two decimals ("140.23MB", "5.75KB", "100.00B"), and returns half a
// unit of its last digit too.
func parseWrkBytes(s string) (n, slack float64, err error) {
	num, ok := strings.CutSuffix(s, "B")
	if !ok || num == "" {
		return 0, 0, fmt.Errorf("byte count %q", s)
	}
	unit := 1.0
	if i := strings.IndexByte("KMGTP", num[len(num)-1]); i >= 0 {
		num, unit = num[:len(num)-1], math.Pow(1024, float64(i+1))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, 0, fmt.Errorf("byte count %q", s)
	}
	_, frac, _ := strings.Cut(num, ".")
	return v * unit, 0.5 * unit / math.Pow(10, float64(len(frac))), nil
}

// wrkResult validates a wrk run against the sizes and body: no error of
// any kind, the server answered at least as many requests as wrk
// counted (it may have answered some wrk had no time to count), and the
// bytes wrk read fit that many responses carrying body. Its ns_per_op is
// 1e9 / requests per second.
func wrkResult(s Sizes, body []byte, r wrkReport, served int64) (Measurement, error) {
	var errs []error
	if r.Non2xx != 0 {
		errs = append(errs, fmt.Errorf("%w: wrk got %d responses that were not 2xx or 3xx", ErrValidation, r.Non2xx))
	}
	if r.SocketErrors != 0 {
		errs = append(errs, fmt.Errorf("%w: wrk had %d socket errors", ErrValidation, r.SocketErrors))
	}
	if r.Requests <= 0 || r.ReqPerSec <= 0 {
		errs = append(errs, fmt.Errorf("%w: wrk did %d requests, %.2f/s", ErrValidation, r.Requests, r.ReqPerSec))
	}
	if served < r.Requests {
		errs = append(errs, fmt.Errorf("%w: the server answered %d requests, wrk counted %d", ErrValidation, served, r.Requests))
	}
	least := float64(r.Requests) * float64(len(body)+minResponseOverhead)
	most := float64(r.Requests+int64(s.HTTPConns)) * float64(len(body)+maxResponseOverhead)
	if r.BytesRead+r.BytesSlack < least || r.BytesRead-r.BytesSlack > most {
		errs = append(errs, fmt.Errorf("%w: wrk read %.0f bytes in %d responses, which does not fit a %d-byte body",
			ErrValidation, r.BytesRead, r.Requests, len(body)))
	}
	if err := errors.Join(errs...); err != nil {
		return Measurement{}, err
	}
	return Measurement{
		Ops:        r.Requests,
		Elapsed:    time.Duration(float64(r.Requests) / r.ReqPerSec * 1e9),
		HasLatency: true,
		P50:        r.P50,
		P99:        r.P99,
		Max:        r.Max,
		Client:     HTTPClientWrk,
	}, nil
}
