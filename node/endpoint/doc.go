// Package endpoint is a replicated service's one local address (issue
// 30): an HTTP reverse proxy that balances each request over the
// service's replicas, retries a request a replica failed on another, and
// measures every replica: requests, errors, latency, requests per second
// and, for an OpenAI-compatible model server, the tokens of each answer
// and its time to first token.
//
// Balancing: each request goes to the replica with the fewest requests in
// flight (ties in turn), skipping a replica that just failed a connection
// for a short while.
//
// Retrying: a request is sent again, to another replica, when the one it
// went to failed before answering anything: the tunnel or connection
// could not be opened, or broke before the response's status line, or
// the replica answered 502, 503 or 504 while another replica is left. The
// client has then received no byte, so even a POST is safe to send again
// as long as the server kept no effect of it, which holds for the model
// APIs this endpoint is for (a completion is a pure function of its
// request). A body over MaxRetryBody is sent once, never retried, since
// it is not kept. Once any byte of an answer went to the client, a
// failure ends that answer (the stream is cut) and it is counted as a
// broken response: resending would repeat what the client already has.
//
// Tokens: an answer's usage (prompt_tokens, completion_tokens) is read
// from a JSON body or, for a stream of server-sent events, from the chunk
// that carries it (the final one); time to first token is the time from
// the request to the first byte of the answer's body.
package endpoint
