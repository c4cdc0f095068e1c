package modelstub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxTokens is the completion length of a request that names none.
const DefaultMaxTokens = 16

// MaxTokens bounds a request's max_tokens, so a request cannot hold the
// server for long.
const MaxTokens = 4096

// maxRequestBytes bounds a request body.
const maxRequestBytes = 1 << 20

// Config is the server's behaviour.
type Config struct {
	// Name identifies this server in every answer (system_fingerprint),
	// so a test can tell which replica answered.
	Name string
	// TokenDelay is the time spent on each token before it is sent.
	TokenDelay time.Duration
}

// Usage is the token count of one answer, as OpenAI reports it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// request is what the server reads of either endpoint's body.
type request struct {
	Model     string `json:"model"`
	Prompt    any    `json:"prompt"` // a string or a list of strings
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	Messages  []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// Handler serves the model API.
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { complete(cfg, true, w, r) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { complete(cfg, false, w, r) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "stub", "object": "model"}}})
	})
	return mux
}

// Token is the i-th token of every completion.
func Token(i int) string { return fmt.Sprintf("t%d ", i) }

// CountPromptTokens is the prompt_tokens the server reports for a text.
func CountPromptTokens(text string) int { return len(strings.Fields(text)) }

func complete(cfg Config, chat bool, w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"malformed request"}}`, http.StatusBadRequest)
		return
	}
	n := req.MaxTokens
	if n <= 0 {
		n = DefaultMaxTokens
	}
	if n > MaxTokens {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"max_tokens over %d"}}`, MaxTokens), http.StatusBadRequest)
		return
	}
	usage := Usage{PromptTokens: CountPromptTokens(req.promptText()), CompletionTokens: n}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	model := req.Model
	if model == "" {
		model = "stub"
	}
	object, chunkObject := "text_completion", "text_completion"
	if chat {
		object, chunkObject = "chat.completion", "chat.completion.chunk"
	}
	id := "cmpl-" + cfg.Name
	if !req.Stream {
		var text strings.Builder
		for i := range n {
			if !wait(r, cfg.TokenDelay) {
				return
			}
			text.WriteString(Token(i))
		}
		choice := map[string]any{"index": 0, "finish_reason": "length"}
		if chat {
			choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
		} else {
			choice["text"] = text.String()
		}
		writeJSON(w, map[string]any{"id": id, "object": object, "model": model, "system_fingerprint": cfg.Name,
			"choices": []any{choice}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	for i := range n {
		if !wait(r, cfg.TokenDelay) {
			return
		}
		choice := map[string]any{"index": 0, "finish_reason": nil}
		if i == n-1 {
			choice["finish_reason"] = "length"
		}
		if chat {
			choice["delta"] = map[string]any{"content": Token(i)}
		} else {
			choice["text"] = Token(i)
		}
		send(map[string]any{"id": id, "object": chunkObject, "model": model, "system_fingerprint": cfg.Name, "choices": []any{choice}})
	}
	// The final chunk carries the usage (OpenAI sends it when
	// stream_options.include_usage is set; this server always does).
	send(map[string]any{"id": id, "object": chunkObject, "model": model, "system_fingerprint": cfg.Name,
		"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// promptText is the text the prompt tokens are counted in.
func (req *request) promptText() string {
	var parts []string
	switch p := req.Prompt.(type) {
	case string:
		parts = append(parts, p)
	case []any:
		for _, s := range p {
			if s, ok := s.(string); ok {
				parts = append(parts, s)
			}
		}
	}
	for _, m := range req.Messages {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, " ")
}

// wait spends d on a token; false when the client went away.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
