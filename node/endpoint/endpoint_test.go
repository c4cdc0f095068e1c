package endpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/modelstub"
)

// stubReplicas starts n model servers and an endpoint over them.
func stubReplicas(t *testing.T, n int, delay time.Duration) (*Endpoint, []*httptest.Server) {
	t.Helper()
	e, err := New(Config{Listen: "127.0.0.1:0"}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var srvs []*httptest.Server
	var rs []Replica
	for i := range n {
		s := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: fmt.Sprintf("r%d", i), TokenDelay: delay}))
		t.Cleanup(s.Close)
		srvs = append(srvs, s)
		rs = append(rs, Replica{ID: fmt.Sprintf("lease-%d", i), Slot: i, Provider: fmt.Sprintf("p%d", i), Dial: dialer(s.Listener.Addr().String())})
	}
	e.SetReplicas(rs)
	return e, srvs
}

func dialer(addr string) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// complete asks the endpoint for a completion of maxTokens and returns
// the text and the replica that answered.
func complete(t *testing.T, addr, prompt string, maxTokens int, stream bool) (text, by string, err error) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"stub","messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":%v}`, prompt, maxTokens, stream)
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", "", fmt.Errorf("status %s: %s", resp.Status, b)
	}
	by = resp.Header.Get("X-Idlegrid-Replica")
	if !stream {
		var v struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return "", by, err
		}
		return v.Choices[0].Message.Content, by, nil
	}
	sc := bufio.NewScanner(resp.Body)
	var sb strings.Builder
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var v struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return "", by, err
		}
		for _, c := range v.Choices {
			sb.WriteString(c.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		return sb.String(), by, err
	}
	if !done {
		return sb.String(), by, errors.New("stream ended without [DONE]")
	}
	return sb.String(), by, nil
}

// settled is the endpoint's stats once n answers are recorded: a client
// can read an answer's end before the endpoint records it.
func settled(t *testing.T, e *Endpoint, n uint64) ServiceStats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := e.Stats()
		if st.Total.Requests >= n && st.Total.InFlight == 0 || time.Now().After(deadline) {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantText(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString(modelstub.Token(i))
	}
	return sb.String()
}

// TestBalancedAndTokensCounted: sequential requests take the replicas in
// turn; concurrent ones spread by load; the tokens counted, per replica
// and in total, are the model server's usage exactly, streamed or not.
func TestBalancedAndTokensCounted(t *testing.T) {
	e, _ := stubReplicas(t, 3, 0)
	addr := e.Addr().String()
	per := map[string]int{}
	var wantPrompt, wantCompletion uint64
	for i := range 30 {
		prompt := strings.Repeat("word ", i%5+1)
		text, by, err := complete(t, addr, prompt, i%7+1, i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		if text != wantText(i%7+1) {
			t.Fatalf("request %d: text %q", i, text)
		}
		per[by]++
		wantPrompt += uint64(modelstub.CountPromptTokens(prompt))
		wantCompletion += uint64(i%7 + 1)
	}
	if len(per) != 3 || per["0"] != 10 || per["1"] != 10 || per["2"] != 10 {
		t.Errorf("requests per replica: %v, want 10 each", per)
	}
	st := settled(t, e, 30)
	if st.Total.Requests != 30 || st.Total.PromptTokens != wantPrompt || st.Total.CompletionTokens != wantCompletion {
		t.Errorf("total %+v, want 30 requests, %d prompt and %d completion tokens", st.Total, wantPrompt, wantCompletion)
	}
	var sum uint64
	for _, r := range st.Replicas {
		sum += r.Tokens()
		if r.Requests != 10 || !r.Live {
			t.Errorf("replica %+v", r)
		}
	}
	if sum != wantPrompt+wantCompletion {
		t.Errorf("replicas' tokens sum to %d, want %d", sum, wantPrompt+wantCompletion)
	}

	// Concurrent streams of 20 tokens at 5ms: least in flight spreads
	// them over all three.
	e2, _ := stubReplicas(t, 3, 5*time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	per = map[string]int{}
	for range 9 {
		wg.Go(func() {
			_, by, err := complete(t, e2.Addr().String(), "hi", 20, true)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			per[by]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(per) != 3 {
		t.Errorf("concurrent requests per replica: %v", per)
	}
	if s := settled(t, e2, 9).Total; s.TTFTP50Ms <= 0 || s.P95Ms < s.TTFTP50Ms {
		t.Errorf("latencies %+v", s)
	}
}

// TestRetriedOnAnotherReplica: a replica that cannot be reached costs an
// error, not a request: every request is answered by the others.
func TestRetriedOnAnotherReplica(t *testing.T) {
	e, srvs := stubReplicas(t, 3, 0)
	srvs[1].Close()
	for i := range 12 {
		if _, _, err := complete(t, e.Addr().String(), "x", 2, i%2 == 0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	st := settled(t, e, 12)
	if st.Total.Requests != 12 || st.Total.Errors == 0 || st.Total.Retries != st.Total.Errors {
		t.Errorf("total %+v", st.Total)
	}
	for _, r := range st.Replicas {
		if r.Slot == 1 && (r.Requests != 0 || r.Errors == 0) {
			t.Errorf("dead replica %+v", r)
		}
	}

	// With no replica left the endpoint says so.
	e.SetReplicas(nil)
	resp, err := http.Get("http://" + e.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("no replica: %s", resp.Status)
	}
}

// TestCutStreamIsBroken: a replica that dies mid-stream cuts the client's
// stream (no false [DONE]) and counts a broken answer; the next request
// goes elsewhere.
func TestCutStreamIsBroken(t *testing.T) {
	e, srvs := stubReplicas(t, 2, 20*time.Millisecond)
	resp, err := http.Post("http://"+e.Addr().String()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"x","max_tokens":200,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the first token came
		t.Fatal(err)
	}
	victim := resp.Header.Get("X-Idlegrid-Replica")
	for i, s := range srvs {
		if fmt.Sprint(i) == victim {
			s.CloseClientConnections()
		}
	}
	rest, err := io.ReadAll(br)
	if err == nil || strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("a cut stream read as whole: %v", err)
	}
	if _, by, err := complete(t, e.Addr().String(), "x", 2, false); err != nil || by == fmt.Sprint(victim) {
		t.Fatalf("after the cut: by %s, %v", by, err)
	}
	if st := settled(t, e, 2).Total; st.Broken != 1 {
		t.Errorf("total %+v", st)
	}
}

// TestUnavailableAnswerRetried: a replica answering 503 has the request
// sent to another; with none left, its 503 reaches the client as it is.
func TestUnavailableAnswerRetried(t *testing.T) {
	e, err := New(Config{Listen: "127.0.0.1:0"}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = e.Run(t.Context()) }()
	defer e.Close()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy loading the model", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	ok := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: "ok"}))
	defer ok.Close()
	e.SetReplicas([]Replica{{ID: "busy", Slot: 0, Dial: dialer(busy.Listener.Addr().String())}, {ID: "ok", Slot: 1, Dial: dialer(ok.Listener.Addr().String())}})
	for range 4 {
		if _, by, err := complete(t, e.Addr().String(), "x", 1, false); err != nil || by != "1" {
			t.Fatalf("by %q: %v", by, err)
		}
	}
	e.SetReplicas([]Replica{{ID: "busy", Slot: 0, Dial: dialer(busy.Listener.Addr().String())}})
	resp, err := http.Get("http://" + e.Addr().String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "busy loading") {
		t.Errorf("%s %q, want the replica's own 503", resp.Status, body)
	}
}
