// Package sim replays GPU workload traces through idlegrid's market and
// through simple baselines on the same inputs, to show what renters pay and
// how full providers' GPUs are (issue 11, docs/sim.md).
//
// It is a discrete-event simulation: no network, no clock, no sleeping, and
// the same Config and seed give the same Result. Providers come from a node
// table (model and GPU count per node) with floors from a price table and a
// seeded per-provider spread; jobs come from a job trace (arrival,
// duration, GPUs, allowed models, tier). A job that cannot be placed waits
// and is retried whenever GPUs free up, until Config.MaxWait; a share of
// providers can be flaky, and a failed lease reruns its job from scratch.
//
// Every market bid is a real auction.Quote, every award a real
// auction.Match, and reliability a real attest/reputation fold
// (reputation.Running) of the outcomes the renter saw. The baselines
// (posted price, cheapest-floor greedy, random, clairvoyant greedy) place
// at the floor directly, and LowerBound is a min-cost-flow relaxation of
// the time-indexed assignment that no policy can beat.
//
// Like auction, the package is pure: it reads traces from an io.Reader
// and imports only auction, attest/reputation and the standard library.
package sim
