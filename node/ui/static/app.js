// The dashboard's only script. Pages work without it; with it, the job
// page follows its job live (server-sent events) and reloads a service's
// endpoint table, and the overview and provider pages refresh their data
// in place.
"use strict";

(function () {
  const job = document.getElementById("job");
  if (job) followJob(job);
  const live = document.querySelector("[data-refresh]");
  if (live) refresh(live, Number(live.dataset.refresh) * 1000);
})();

function followJob(job) {
  const id = job.dataset.job;
  const base = "/ui/jobs/" + encodeURIComponent(id);
  const state = document.getElementById("state");
  const list = document.getElementById("events");
  const log = document.getElementById("log");
  let logging = false;
  let terminal = job.dataset.terminal === "true";

  // followLog streams the log until the work ends; it runs again when a
  // later event says there may be more (a new lease, the end).
  async function followLog() {
    if (logging) return;
    logging = true;
    try {
      const res = await fetch(base + "/log" + (terminal ? "" : "?follow=1"));
      if (!res.ok) return;
      log.textContent = "";
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        log.textContent += dec.decode(value, { stream: true });
        log.scrollTop = log.scrollHeight;
      }
    } catch (e) {
      // The stream was cut; the next event retries.
    } finally {
      logging = false;
    }
  }

  function finish(s) {
    terminal = true;
    job.dataset.terminal = "true";
    if (s) state.textContent = s;
    if (s === "completed") document.getElementById("result").hidden = false;
    const cancel = document.getElementById("cancel");
    if (cancel) cancel.hidden = true;
    followLog();
    swap("job-leases");
  }

  followLog();
  // A service's endpoint counts move without job events: reload them
  // until the endpoint is gone (it ends with the job).
  if (document.getElementById("job-service")) {
    const tick = setInterval(async function () {
      if (!document.hidden && !(await swap("job-service"))) clearInterval(tick);
    }, 5000);
  }
  // Opened on a finished job too: the stream replays its events and ends.
  const es = new EventSource(base + "/events");
  let first = true;
  es.onopen = function () { first = true; };
  es.addEventListener("job", function (m) {
    const ev = JSON.parse(m.data);
    // Counts the events that arrived live (tests read it).
    job.dataset.live = String(Number(job.dataset.live || 0) + 1);
    // The stream replays past events first: it replaces what the
    // server rendered.
    if (first) { list.textContent = ""; first = false; }
    const li = document.createElement("li");
    const t = document.createElement("time");
    t.textContent = new Date(ev.at).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
    const b = document.createElement("b");
    b.textContent = ev.kind;
    li.append(t, " ", b, " " + ev.message);
    list.append(li);
    if (ev.state) state.textContent = ev.state;
    if (ev.terminal) finish(ev.state);
    else followLog();
  });
  es.addEventListener("end", function (m) {
    es.close();
    finish(JSON.parse(m.data).state);
  });
}

// refresh reloads the page's data section every period while the tab is
// visible, keeping the rest of the page (and any focus) as it is.
function refresh(section, period) {
  setInterval(async function () {
    if (document.hidden) return;
    try {
      const res = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.querySelector("[data-refresh]");
      if (fresh) section.replaceWith(fresh);
      section = fresh || section;
    } catch (e) {
      // Try again next period.
    }
  }, period);
}

// swap replaces the element with the given id by its current version
// from the server. It is false when the server's page no longer has one.
async function swap(id) {
  try {
    const res = await fetch(location.href, { headers: { Accept: "text/html" } });
    if (!res.ok) return true;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const fresh = doc.getElementById(id);
    const old = document.getElementById(id);
    if (fresh && old) old.replaceWith(fresh);
    return fresh !== null;
  } catch (e) {
    return true; // the old table stays; try again
  }
}
