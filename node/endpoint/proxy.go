package endpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// hopHeaders are the connection's own headers, never passed on.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ServeHTTP sends the request to a replica and relays its answer; a
// replica that fails before answering anything is replaced by another
// (see the package doc for the rule).
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := e.deps.Clock()
	body, retriable, err := e.readBody(r)
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	tried := map[string]bool{}
	var lastErr error
	for attempt := range e.cfg.MaxAttempts {
		if attempt > 0 && !retriable {
			break
		}
		rep := e.pick(tried)
		if rep == nil {
			break
		}
		tried[rep.ID] = true
		if attempt > 0 {
			e.total.update(func(s *Stats) { s.Retries++ })
			e.m.requests.WithLabelValues("retried").Inc()
		}
		out := r.Clone(r.Context())
		out.RequestURI, out.URL.Scheme, out.URL.Host = "", "http", "replica"
		out.Body, out.GetBody = body(), nil
		for _, h := range hopHeaders {
			out.Header.Del(h)
		}
		resp, err := rep.transport.RoundTrip(out)
		if err == nil && retriable && attempt+1 < e.cfg.MaxAttempts && unavailable(resp.StatusCode) && e.hasUntried(tried) {
			_ = resp.Body.Close()
			err = fmt.Errorf("replica answered %s", resp.Status)
		}
		if err != nil {
			e.release(rep, true)
			rep.rec.update(func(s *Stats) { s.Errors++ })
			e.total.update(func(s *Stats) { s.Errors++ })
			e.m.errors.WithLabelValues(slotLabel(rep.Slot)).Inc()
			lastErr = err
			if r.Context().Err() != nil {
				return // the client went away
			}
			continue
		}
		e.relay(w, resp, rep, start)
		return
	}
	e.m.requests.WithLabelValues("unavailable").Inc()
	msg := ErrNoReplica.Error()
	if lastErr != nil {
		msg = fmt.Sprintf("%s: %v", msg, lastErr)
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// unavailable reports a status that says the replica could not serve the
// request (rather than an answer to it).
func unavailable(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// readBody keeps the request's body, up to MaxRetryBody, so it can be
// sent again; a longer one streams once. body returns a fresh reader of
// it for each attempt.
func (e *Endpoint) readBody(r *http.Request) (body func() io.ReadCloser, retriable bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() io.ReadCloser { return http.NoBody }, true, nil
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, e.cfg.MaxRetryBody+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(buf)) <= e.cfg.MaxRetryBody {
		return func() io.ReadCloser { return io.NopCloser(bytes.NewReader(buf)) }, true, nil
	}
	rest := r.Body
	return func() io.ReadCloser { return io.NopCloser(io.MultiReader(bytes.NewReader(buf), rest)) }, false, nil
}

// relay copies a replica's answer to the client as it comes, flushing
// each read so a stream stays a stream, and reads its usage. An answer
// cut after its first byte is aborted towards the client too, so the
// client sees it cut rather than short.
func (e *Endpoint) relay(w http.ResponseWriter, resp *http.Response, rep *replica, start time.Time) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Set("X-Idlegrid-Replica", slotLabel(rep.Slot))
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	ur := &usageReader{events: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	var ttft time.Duration
	buf := make([]byte, 32<<10)
	var readErr, writeErr error
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if ttft == 0 {
				ttft = e.deps.Clock().Sub(start)
			}
			ur.write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				writeErr = werr
				break
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	end := e.deps.Clock()
	lat := end.Sub(start)
	if ttft == 0 {
		ttft = lat
	}
	broken := readErr != nil
	u := ur.result()
	e.release(rep, broken)
	rep.rec.answered(end, lat, ttft, u, broken)
	e.total.answered(end, lat, ttft, u, broken)
	e.m.observe(rep.Slot, lat, ttft, u, broken, writeErr != nil)
	if broken {
		e.deps.Logger.Info("replica's answer cut", "replica", rep.ID, "err", readErr)
		panic(http.ErrAbortHandler)
	}
}
