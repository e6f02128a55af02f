/* coach dashboard: uploads with progress, and the walkthrough's step in the address bar.
 *
 * Uploads: a file chosen in (or dropped on) the explorer's drop zone is taken before the drop zone
 * reads it into the page, and sent as it is in the body of one POST to the server (the zone's
 * data-url), with the transfer's progress and then the reading shown in #exp-progress. The answer
 * opens the report (the shell's report store) or is shown as its one-line error. Every message
 * names the file as the user chose it.
 */
(function () {
  "use strict";

  var ZONE = "exp-upload";

  function size(bytes) {
    return bytes >= 1e9 ? (bytes / 1e9).toFixed(2) + " GB" : bytes >= 1e6 ? (bytes / 1e6).toFixed(1) + " MB"
      : bytes >= 1e3 ? (bytes / 1e3).toFixed(1) + " kB" : bytes + " B";
  }

  function setProps(id, props) {
    if (window.dash_clientside && window.dash_clientside.set_props) {
      window.dash_clientside.set_props(id, props);
    }
  }

  function div(className, children, extra) {
    var props = {className: className, children: children};
    for (var k in (extra || {})) { props[k] = extra[k]; }
    return {type: "Div", namespace: "dash_html_components", props: props};
  }

  function progress(text, percent) {
    var bar = {type: "Progress", namespace: "dash_html_components",
               props: percent === null ? {max: 100} : {value: Math.round(percent), max: 100}};
    setProps("exp-progress", {children: text === null ? null : [div("small", text), bar]});
  }

  function error(text) {
    progress(null);
    setProps("exp-message", {children: div("alert error", text, {id: "exp-error", role: "alert"})});
  }

  function send(file) {
    var holder = document.getElementById(ZONE);
    holder = holder && holder.closest("[data-url]");
    if (!holder) { return; }
    var limit = parseInt(holder.getAttribute("data-limit"), 10);
    var name = file.name || "uploaded file";
    if (file.size > limit) {
      error(name + ": is " + size(file.size) + ", over the upload limit of " + size(limit)
            + " (run `coach dash --max-upload-mb N` to raise it, or `coach load` on the command line)");
      return;
    }
    setProps("exp-message", {children: null});
    progress("Sending " + name + " (" + size(file.size) + ") to coach: 0%", 0);
    var xhr = new XMLHttpRequest();
    var last = 0;
    xhr.open("POST", holder.getAttribute("data-url") + "?name=" + encodeURIComponent(name));
    xhr.setRequestHeader("X-Coach-Upload", "1");
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = function (e) {
      var now = Date.now();
      if (!e.lengthComputable || now - last < 150) { return; }
      last = now;
      var pct = 100 * e.loaded / e.total;
      progress("Sending " + name + " (" + size(file.size) + ") to coach: " + Math.floor(pct) + "%", pct);
    };
    xhr.upload.onload = function () {
      progress("Reading " + name + " (" + size(file.size) + "): sent, coach is reading it…", null);
    };
    xhr.onerror = function () { error(name + ": the upload failed (is coach dash still running?)"); };
    xhr.onload = function () {
      var answer = null;
      try { answer = JSON.parse(xhr.responseText); } catch (e) { answer = null; }
      if (answer && answer.token) {
        progress(null);
        var opened = {token: answer.token, name: answer.name};
        setProps("report-store", {data: opened});  // kept for the session
        setProps("exp-opened", {data: opened});  // drawn now
      } else if (answer && answer.error) {
        error(answer.error);
      } else if (xhr.status === 413) {
        error(name + ": is " + size(file.size) + ", over the upload limit of " + size(limit));
      } else {
        error(name + ": the server could not read it (HTTP " + xhr.status + ")");
      }
    };
    xhr.send(file);
  }

  function inZone(node) {
    return node && node.closest && node.closest("#" + ZONE);
  }

  // Capture phase, on the document: before the drop zone's own handlers read the file into the page.
  document.addEventListener("change", function (e) {
    var input = e.target;
    if (!inZone(input) || input.type !== "file" || !input.files || !input.files.length) { return; }
    e.stopImmediatePropagation();
    e.stopPropagation();
    var file = input.files[0];
    input.value = "";
    send(file);
  }, true);

  document.addEventListener("drop", function (e) {
    if (!inZone(e.target) || !e.dataTransfer || !e.dataTransfer.files.length) { return; }
    e.preventDefault();
    e.stopImmediatePropagation();
    e.stopPropagation();
    send(e.dataTransfer.files[0]);
  }, true);

  /* The walkthrough's step in the address bar (?step=N), so that reload, Back and Forward show the
   * step the user was on. Called by the scenario page's clientside callback. */
  window.coachStep = function (state) {
    if (!state || typeof state.step !== "number") { return window.dash_clientside.no_update; }
    var url = new URL(window.location.href);
    var want = String(state.step + 1);
    var had = url.searchParams.get("step");
    if (had === want) { return window.dash_clientside.no_update; }
    url.searchParams.set("step", want);
    if (had === null) {
      window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    } else {
      window.history.pushState(window.history.state, "", url.pathname + url.search + url.hash);
    }
    return window.dash_clientside.no_update;
  };
}());
