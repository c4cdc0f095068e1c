// Package modelstub is a tiny OpenAI-compatible model server to test
// inference endpoints with, no GPU, weights or hub needed (issue 30). It
// answers /v1/chat/completions and /v1/completions, streamed (server-sent
// events) or not, with deterministic tokens at a configurable delay per
// token, and reports usage (prompt_tokens, completion_tokens) as a real
// server does; /healthz answers 200.
//
// The tokens are a pure function of the request: the completion of a
// request asking max_tokens n is n tokens "t0 ", "t1 ", ... and its prompt
// counts one token per whitespace-separated word of the prompt (of every
// message's content, for a chat). So a test knows the ground truth of
// usage without asking the server.
//
// testdata/server is the same handler as a static program, which the
// tests pack into a FROM-scratch image.
package modelstub
