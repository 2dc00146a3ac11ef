// The dashboard's runs page: ticks, the baseline mark and the Compare button.
(() => {
  "use strict";
  const KEY = "evaldelta-dashboard-ticked";
  let state = null;
  try { state = JSON.parse(sessionStorage.getItem(KEY) || "null"); } catch { state = null; }
  if (!state || !Array.isArray(state.ticked)) state = { ticked: [], baseline: null };
  state.ticked = state.ticked.filter((v) => /^[0-9]+$/.test(v));
  const boxes = Array.from(document.querySelectorAll("input.tick"));
  const marks = Array.from(document.querySelectorAll("input.mark"));
  const form = document.getElementById("pick");
  const button = document.getElementById("compare");
  const said = document.getElementById("ticked");
  const clear = document.getElementById("clear-ticks");
  const save = () => {
    try { sessionStorage.setItem(KEY, JSON.stringify(state)); } catch { /* private mode */ }
  };
  const baseline = () =>
    state.ticked.includes(state.baseline) ? state.baseline : state.ticked[0];
  const sync = () => {
    const base = baseline();
    for (const box of boxes) {
      box.checked = state.ticked.includes(box.value);
      box.closest("tr").classList.toggle("ticked", box.checked);
    }
    for (const mark of marks) {
      mark.checked = mark.value === base;
      mark.closest("tr").classList.toggle("baseline", mark.checked);
    }
    button.disabled = state.ticked.length < 2;
    clear.hidden = state.ticked.length === 0;
    said.textContent = state.ticked.length
      ? state.ticked.length + " ticked: baseline run " + base + (state.ticked.length > 1
        ? ", candidates " + state.ticked.filter((v) => v !== base).map((v) => "run " + v)
          .join(", ")
        : "; tick at least one more to compare")
      : "Tick two or more runs, then press Compare: the first ticked (or the one " +
        "marked as baseline) is the baseline.";
  };
  for (const box of boxes) {
    box.addEventListener("change", () => {
      state.ticked = state.ticked.filter((v) => v !== box.value);
      if (box.checked) state.ticked.push(box.value);
      save();
      sync();
    });
  }
  for (const mark of marks) {
    mark.addEventListener("change", () => {
      if (!state.ticked.includes(mark.value)) state.ticked.push(mark.value);
      state.baseline = mark.value;
      save();
      sync();
    });
  }
  clear.addEventListener("click", () => {
    state = { ticked: [], baseline: null };
    save();
    sync();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (state.ticked.length < 2) return;
    const base = baseline();
    const query = new URLSearchParams([["baseline", base]]);
    for (const v of state.ticked) if (v !== base) query.append("candidate", v);
    window.location.assign("/compare?" + query.toString());
  });
  sync();
  document.documentElement.setAttribute("data-ready", "true");
})();
