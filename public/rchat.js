// The page's own behaviour, loaded by Chainlit as custom_js (configured in backend/page/booth.py):
//  * the live strip: engine numbers the server pushes to every page about every 2 s;
//  * booth mode (data-kiosk="true"): return to a fresh chat after data-idle-seconds without typing,
//    touching or streaming; with data-attract="true", ask a starter by itself while idle, let the
//    answer stream, then reset; any touch or key stops that at once.
// It drives the page only through what a visitor could press (#new-chat-button, the starters,
// #stop-button), so Chainlit stays in charge of sessions and every chat is stored as usual.
(function () {
  "use strict";
  const options = (document.currentScript && document.currentScript.dataset) || {};
  const kiosk = options.kiosk === "true";
  const idleMs = 1000 * Number(options.idleSeconds || 90);
  const attract = options.attract === "true";
  const lingerMs = 1000 * Number(options.lingerSeconds || 12);

  // --- the live strip ---
  const strip = document.createElement("div");
  strip.id = "rchat-live-strip";
  strip.hidden = true;
  strip.setAttribute("aria-live", "off");
  strip.innerHTML =
    '<span class="rchat-dot"></span><span id="rchat-live-model"></span>' +
    '<span><b id="rchat-live-running">0</b> running</span>' +
    '<span><b id="rchat-live-waiting">0</b> waiting</span>' +
    '<span><b id="rchat-live-tps">0</b> tok/s</span>' +
    '<span>KV cache <b id="rchat-live-kv">0</b>%</span>' +
    '<span id="rchat-live-page" hidden></span>';  // "page 2 of 4" behind the balancer

  function showStrip(data, page) {
    if (!strip.isConnected && document.body) document.body.appendChild(strip);
    strip.hidden = !data;  // no data: the server has no /metrics (or it is down)
    if (!data) return;
    const set = (id, value) => { strip.querySelector("#" + id).textContent = value; };
    set("rchat-live-model", data.model);
    set("rchat-live-running", String(data.running));
    set("rchat-live-waiting", String(data.waiting));
    set("rchat-live-tps", data.tokens_per_second == null ? "–" : data.tokens_per_second.toFixed(1));
    set("rchat-live-kv", data.kv_cache_percent == null ? "–" : data.kv_cache_percent.toFixed(1));
    strip.classList.toggle("rchat-busy", data.running > 0);
    const where = strip.querySelector("#rchat-live-page");
    where.textContent = page || "";
    where.hidden = !page;
  }

  // Chainlit hands the server's window_message to window.parent.postMessage, which is this window
  // when the page is not framed. It also forwards every window message back to the server, so ours
  // stop here: this listener is added before Chainlit's (which waits for React to mount).
  window.addEventListener("message", (event) => {
    const data = event.data;
    if (!data || data.kind !== "rchat-live") return;
    event.stopImmediatePropagation();
    showStrip(data.strip, data.page);
  });

  // --- the draft ---
  // Chainlit swaps its composer for a new one when an empty chat gets its first message (on a busy
  // host the "server is starting" notice can arrive after the visitor began typing), and again when a
  // new chat moves to /thread/<id>. Words typed into the old box would be lost: carry them over.
  let draft = "";
  let box = null;
  const composer = () => document.getElementById("chat-input");
  document.addEventListener("input", (event) => {
    if (event.target && event.target.id === "chat-input") draft = event.target.value;
  }, true);
  document.addEventListener("keydown", (event) => {  // Enter sends (Shift+Enter is a new line)
    if (event.target && event.target.id === "chat-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing) draft = "";
  }, true);
  document.addEventListener("click", (event) => {  // sent, or a new chat asked for: nothing to carry
    if (event.target && event.target.closest && event.target.closest("#chat-submit, #new-chat-button, #starters button")) draft = "";
  }, true);
  function keepDraft() {
    const now = composer();
    if (!now || now === box) return;
    box = now;
    if (draft && !now.value) {
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set.call(now, draft);
      now.dispatchEvent(new Event("input", { bubbles: true }));  // so React's state has it too
    }
  }
  new MutationObserver(keepDraft).observe(document.documentElement, { childList: true, subtree: true });

  if (!kiosk) return;

  // --- booth mode ---
  document.documentElement.classList.add("rchat-kiosk");
  let lastActive = Date.now();
  let demo = null;  // the attract answer in progress: {quietSince: when it last streamed or waited}
  let nextStarter = 0;

  const $ = (selector) => document.querySelector(selector);
  const streaming = () => !!$("#stop-button");
  const hasChat = () => !!$('[data-step-type="user_message"]');
  let awaitingSince = null;
  // A question just sent whose answer has not started (Chainlit shows Stop only once the task runs):
  // busy too, so a slow start is never reset away; capped, so a lost answer can't hold the booth.
  function awaitingAnswer(now) {
    const steps = document.querySelectorAll('[data-step-type="user_message"], [data-step-type="assistant_message"]');
    const waiting = steps.length > 0 && steps[steps.length - 1].dataset.stepType === "user_message";
    awaitingSince = waiting ? (awaitingSince || now) : null;
    return waiting && now - awaitingSince < Math.max(idleMs, 120000);
  }
  const starterButtons = () => Array.from(document.querySelectorAll("#starters button:not([disabled])"));

  function resetChat({ clearInput = false } = {}) {
    const button = $("#new-chat-button");
    if (button) button.click();
    const input = $("#chat-input");
    if (clearInput && input && input.value) {
      // Not the next visitor's words: empty the box through React's own setter, so its state agrees.
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set.call(input, "");
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
    lastActive = Date.now();
  }

  function startDemo() {
    const buttons = starterButtons();
    if (!buttons.length) return;
    const button = buttons[nextStarter % buttons.length];
    nextStarter += 1;
    demo = { quietSince: Date.now() };
    button.click();
  }

  function visitorActed() {
    lastActive = Date.now();
    if (!demo) return;
    demo = null;  // the visitor takes over: stop the demo answer and give them a fresh chat
    if (streaming()) $("#stop-button").click();
    resetChat();
  }

  // Capture phase, so the page's own handlers can't hide a touch or key from us.
  for (const type of ["pointerdown", "touchstart", "keydown", "input", "wheel"]) {
    window.addEventListener(type, (event) => { if (event.isTrusted) visitorActed(); }, { capture: true, passive: true });
  }

  function tickDemo(now) {
    if (streaming() || awaitingAnswer(now)) {
      demo.quietSince = now;
    } else if (now - demo.quietSince > lingerMs) {
      demo = null;  // the answer has been up long enough: back to the starters
      resetChat({ clearInput: true });
    }
  }

  let startersSince = null;
  function tick() {
    const now = Date.now();
    // A demo waits until the starters (sent once the socket is up) have been on screen a whole idle
    // time, so it never races the page's own start-up or the login round trip.
    startersSince = starterButtons().length ? (startersSince || now) : null;
    if (location.pathname.endsWith("/login")) { lastActive = now; return; }
    if (demo) return tickDemo(now);
    if (streaming() || awaitingAnswer(now)) { lastActive = now; return; }  // idle counts from the answer's end
    if (now - lastActive < idleMs) return;
    if (hasChat() || ($("#chat-input") || {}).value) resetChat({ clearInput: true });
    else if (attract && startersSince && now - startersSince >= idleMs) startDemo();
  }
  window.setInterval(tick, 500);
})();
