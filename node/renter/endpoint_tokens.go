package renter

import "time"

// A service's tokens outlive its endpoint: the endpoint counts them in
// memory, and the job record keeps the sum over the job's endpoints, saved
// every saveTokensEvery while one serves and when it stops, so `spend`
// reports what a service's tokens cost after it ended (issue 30). A crash
// loses at most the last interval's count.

// saveTokensEvery is how often a serving endpoint saves its counts.
const saveTokensEvery = 10 * time.Second

// tokenCount is a number of prompt and completion tokens.
type tokenCount struct{ prompt, completion uint64 }

func (c tokenCount) total() uint64 { return c.prompt + c.completion }

// now is the job's count: its earlier endpoints' and this one's.
func (re *runningEndpoint) now() tokenCount {
	st := re.ep.Stats().Total
	return tokenCount{prompt: re.base.prompt + st.PromptTokens, completion: re.base.completion + st.CompletionTokens}
}

// saveTokens stores the job's count when it changed since the last save.
func (es *endpoints) saveTokens(jobID string, re *runningEndpoint) {
	if es.endpointDeps.saveTokens == nil {
		return
	}
	re.saveMu.Lock()
	defer re.saveMu.Unlock()
	c := re.now()
	if c == re.saved {
		return
	}
	if err := es.endpointDeps.saveTokens(jobID, c.prompt, c.completion); err != nil {
		es.log.Warn("endpoint: save token counts", "job", jobID, "err", err)
		return
	}
	re.saved = c
}

// tokens is what a job's endpoints served over its life: the running
// endpoint's live count, else the job's saved one.
func (es *endpoints) tokens(jobID string) tokenCount {
	es.mu.Lock()
	re := es.byJob[jobID]
	es.mu.Unlock()
	if re != nil {
		return re.now()
	}
	j, err := es.db.GetJob(jobID)
	if err != nil {
		return tokenCount{}
	}
	return tokenCount{prompt: j.PromptTokens, completion: j.CompletionTokens}
}
