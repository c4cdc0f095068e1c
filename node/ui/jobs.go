package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

// jobForm is the submit form's fields, kept to refill the form when a
// spec is refused.
type jobForm struct {
	Name, Module, Image, Command, GPUs, GPU, Tier, MaxPrice, Duration, BidWindow, YAML string
}

// defaultForm is what the form starts with: one GPU, silver, a short job.
var defaultForm = jobForm{GPUs: "1", Tier: "silver", MaxPrice: "3.00", Duration: "1m", BidWindow: "2s"}

func (u *UI) getJobs(w http.ResponseWriter, r *http.Request, s *session) error {
	return u.showJobs(w, r, s, http.StatusOK, defaultForm, "")
}

// renterOnly answers a jobs page on a node that is not a renter: it says
// where jobs live instead of showing an error.
func (u *UI) renterOnly(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		switch role := u.role(); role {
		case "renter":
			return next(w, r, s)
		case "provider":
			u.notHere(w, s, "Jobs", "This node is a provider: jobs are posted and followed on a renter node. "+
				"The leases this provider serves, and what they earned, are on its Provider page.")
		default:
			u.notHere(w, s, "Jobs", "This node is a "+role+": it neither rents nor offers GPUs. Jobs are posted and followed on a renter node.")
		}
		return nil
	}
}

func (u *UI) showJobs(w http.ResponseWriter, r *http.Request, s *session, status int, f jobForm, submitErr string) error {
	jobs, err := u.b.Jobs()
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	n := days(r)
	sp, err := u.b.Spend(u.opts.Now().AddDate(0, 0, -n))
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	cols := make([]column, 0, len(sp.Days))
	for _, d := range sp.Days {
		day := dayLabel(d.Day)
		cols = append(cols, column{Label: day, Val: d.SpentUSD, Text: fmt.Sprintf("%s: %s on %s, %s", day, usdAmount(d.SpentUSD), words.Plural(d.Leases, "lease"), gpuHours(d.GPUHours))})
	}
	chart := newBarChart("Spent per day (USD)", "USD", "day", fmt.Sprintf("No spending in the last %d days: what this renter's signed vouchers pay providers appears here.", n),
		cols, nil, 0)
	u.render(w, status, "jobs", s, map[string]any{
		"Title": "Jobs", "Jobs": jobs, "Form": f, "SubmitErr": submitErr,
		"Spend": sp, "SpendChart": chart, "Days": n,
	})
	return nil
}

func (u *UI) postJob(w http.ResponseWriter, r *http.Request, s *session) error {
	f := jobForm{
		Name: r.PostFormValue("name"), Module: r.PostFormValue("module"), Image: r.PostFormValue("image"),
		Command: r.PostFormValue("command"), GPUs: r.PostFormValue("gpus"), GPU: r.PostFormValue("gpu"),
		Tier: r.PostFormValue("tier"), MaxPrice: r.PostFormValue("max_price"), Duration: r.PostFormValue("duration"),
		BidWindow: r.PostFormValue("bid_window"), YAML: r.PostFormValue("yaml"),
	}
	spec := []byte(f.YAML)
	if strings.TrimSpace(f.YAML) == "" {
		var err error
		if spec, err = f.spec(); err != nil {
			return u.showJobs(w, r, s, http.StatusBadRequest, f, err.Error())
		}
	}
	job, err := u.b.SubmitJob(r.Context(), spec, api.SubmitOptions{})
	var apiErr *api.Error
	if errors.As(err, &apiErr) && apiErr.Status < 500 {
		return u.showJobs(w, r, s, apiErr.Status, f, apiErr.Message)
	}
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	http.Redirect(w, r, "/ui/jobs/"+job.ID, http.StatusSeeOther)
	return nil
}

// spec turns the form into a YAML job spec; the node validates it as it
// validates a file, so the form adds no rules of its own beyond types.
func (f jobForm) spec() ([]byte, error) {
	js := auction.JobSpec{
		Name: strings.TrimSpace(f.Name), Module: strings.TrimSpace(f.Module), Image: strings.TrimSpace(f.Image),
		Tier: f.Tier, Duration: strings.TrimSpace(f.Duration), BidWindow: strings.TrimSpace(f.BidWindow),
	}
	for line := range strings.Lines(f.Command) {
		if arg := strings.TrimRight(line, "\r\n"); arg != "" {
			js.Command = append(js.Command, arg)
		}
	}
	if v := strings.TrimSpace(f.GPUs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("GPUs %q: want a whole number", v)
		}
		js.GPUs = &n
	}
	for m := range strings.SplitSeq(f.GPU, ",") {
		if m = strings.TrimSpace(m); m != "" {
			js.GPU = append(js.GPU, m)
		}
	}
	if v := strings.TrimSpace(f.MaxPrice); v != "" {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("max price %q: want USD per GPU-hour, such as 2.50", v)
		}
		js.MaxPrice = p
	}
	b, err := yaml.Marshal(&js)
	if err != nil {
		return nil, fmt.Errorf("encode job spec: %w", err)
	}
	return b, nil
}

func (u *UI) getJob(w http.ResponseWriter, r *http.Request, s *session) error {
	job, err := u.b.Job(r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	u.render(w, http.StatusOK, "job", s, map[string]any{"Title": "Job " + lease.Short(job.ID), "Job": job, "Service": newServiceView(job.Endpoint)})
	return nil
}

// liveEvent is one server-sent event of the job page: the event and the
// job's state after it.
type liveEvent struct {
	api.JobEvent
	State    string `json:"state"`
	Terminal bool   `json:"terminal"`
}

// getJobEvents relays WatchJob as server-sent events, then an "end"
// event so the page stops listening instead of reconnecting.
func (u *UI) getJobEvents(w http.ResponseWriter, r *http.Request, _ *session) error {
	id := r.PathValue("id")
	events, err := u.b.WatchJob(r.Context(), id)
	if err != nil {
		return fmt.Errorf("watch job: %w", err)
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errors.New("watch job: streaming unsupported")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	send := func(kind string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, data)
		flusher.Flush()
		return err == nil
	}
	for ev := range events {
		le := liveEvent{JobEvent: ev}
		if job, err := u.b.Job(id); err == nil {
			le.State, le.Terminal = job.State, job.Terminal()
		}
		if !send("job", le) {
			return nil
		}
	}
	state := ""
	if job, err := u.b.Job(id); err == nil {
		state = job.State
	}
	send("end", map[string]string{"state": state})
	return nil
}

func (u *UI) getJobLog(w http.ResponseWriter, r *http.Request, _ *session) error {
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fw := api.NewFlushWriter(w)
	err := u.b.JobLogs(r.Context(), r.PathValue("id"), r.URL.Query().Get("lease"), follow, fw)
	if err != nil && !fw.Wrote() {
		return fmt.Errorf("job log: %w", err)
	}
	return nil
}

func (u *UI) getJobResult(w http.ResponseWriter, r *http.Request, _ *session) error {
	res, err := u.b.JobResult(r.Context(), r.PathValue("id"), r.URL.Query().Get("lease"))
	if err != nil {
		return fmt.Errorf("job result: %w", err)
	}
	f, err := os.Open(res.Path)
	if err != nil {
		return fmt.Errorf("job result: %w", err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeName(res.CID)+`.tar"`)
	http.ServeContent(w, r, res.CID+".tar", time.Time{}, f)
	return nil
}

func (u *UI) postJobCancel(w http.ResponseWriter, r *http.Request, _ *session) error {
	job, err := u.b.CancelJob(r.Context(), r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	http.Redirect(w, r, "/ui/jobs/"+job.ID, http.StatusSeeOther)
	return nil
}
