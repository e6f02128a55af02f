"""Every component id the app uses, in one place, so that a layout and the callbacks that read it
cannot disagree on a spelling. Grouped by page; ids are plain strings (or dict patterns)."""

# shell (app.py)
URL = "url"
PAGE = "page"
NAV = "nav"
DRAWN = "drawn-url"  # the URL the layout came with, until the location has reported it once
REPORT = "report-store"  # the report the user opened: {"token", "name"} (session storage)

# home
HOME_GALLERY = "home-gallery"
HOME_LADDERS = "home-ladders"

# scenario walkthrough
SCN_STEP = "scn-step-store"  # {"step": int, "answer": str}
SCN_STEPPER = "scn-stepper"
SCN_BODY = "scn-body"
SCN_NEXT = "scn-next"
SCN_BACK = "scn-back"
SCN_ANSWER = "scn-answer"
SCN_COMMIT = "scn-commit"
SCN_ID = "scn-id"  # the scenario id shown (a store)
SCN_WANTED = "scn-wanted"  # the step the URL asks for (?step=N, stored 0-based), or None
SCN_SAVED = "scn-saved"  # per scenario id: {"step", "answer"} (session storage)
SCN_URL_SYNC = "scn-url-sync"  # holds nothing: the output the callback that puts the step in the URL needs
SCN_SOURCE = "scn-source"  # the Evidence step's source of the slow kernel, the planted line highlighted

# report explorer
EXP_UPLOAD = "exp-upload"
EXP_PICK = "exp-pick"
EXP_MESSAGE = "exp-message"
EXP_BODY = "exp-body"
EXP_TABS = "exp-tabs"
EXP_TABLE = "exp-kernel-table"
EXP_KERNEL = "exp-kernel-filter"
EXP_FINDINGS = "exp-findings"
EXP_ROOFLINE = "exp-roofline"
EXP_TIMELINE = "exp-timeline"
EXP_TIMELINE_NOTE = "exp-timeline-note"
EXP_SOURCE = "exp-source"  # a kernel's source beside a finding; the id is EXP_SOURCE + "-<launch id>"
EXP_PROGRESS = "exp-progress"  # an upload's progress, written by assets/coach.js
EXP_ARRIVED = "exp-arrived"  # comes with the page ({"drawn": trace id or None}): the report store is drawn each time the page is shown
EXP_OPENED = "exp-opened"  # the report to draw: one the user just opened, or the session's on arrival
EXP_FINDINGS_PAGE = "exp-findings-page"  # the page of finding groups shown (0-based)
EXP_FINDINGS_LEAD = "exp-findings-lead"  # "N findings in M groups ..."
EXP_PAGER = "exp-pager"
EXP_PAGE_PREV = "exp-page-prev"
EXP_PAGE_NEXT = "exp-page-next"
EXP_PAGE_LABEL = "exp-page-label"
EXP_TIMELINE_SEARCH = "exp-timeline-search"
EXP_TIMELINE_MATCHES = "exp-timeline-matches"
EXP_TIMELINE_DETAIL = "exp-timeline-detail"  # what the clicked bar holds
EXP_COMPARE_PICK = "exp-compare-pick"  # the baseline to compare the report with
EXP_COMPARE = "exp-compare"  # coach diff of the baseline and the report

# ladders
LAD_BODY = "lad-body"
LAD_OVERVIEW = "lad-overview"  # /ladders: the table of every recorded ladder
LAD_GOAL = "lad-goal"  # /ladders/<name>: the goal met or missed, and the notes' conclusion
LAD_TRAJECTORY = "lad-trajectory"
LAD_STEPS = "lad-steps"
LAD_RUNGS = "lad-rungs"
LAD_PEERS = "lad-peers"
LAD_ROOFLINE = "lad-roofline"  # a compute-bound ladder: each rung on the roofline
LAD_SIZES = "lad-sizes"  # a ladder recorded at several sizes: one link per size

# hardware and predictions
HW_GPU = "hw-gpu"
HW_DATASHEET = "hw-datasheet"
HW_ROOFLINE = "hw-roofline"
HW_RIDGES = "hw-ridges"
HW_BYTES = "hw-bytes"
HW_FLOPS = "hw-flops"
HW_DTYPE = "hw-dtype"
HW_MEASURED = "hw-measured-ms"
HW_PREDICTION = "hw-prediction"
EXP_SUMMARY = "exp-summary"
EXP_SHOWN = "exp-shown"  # the report the body shows: {"token", "name"}
EXP_DRAWN = "exp-drawn"  # set once the report's first plot is on screen: the diagnosis waits for it

# reference (glossary, quick references, numbers)
REF_TERM = "ref-term"  # the glossary query
REF_ENTRY = "ref-entry"  # the entry found, or suggestions
REF_TERMS = "ref-terms"  # every term, by topic
REF_GPU = "ref-gpu"
REF_NUMBERS = "ref-numbers"
REF_SHEETS = "ref-sheets"  # the CUDA / Triton quick-reference tabs

# practice (drills and plans)
PRC_KIND = "prc-kind"
PRC_GPU = "prc-gpu"
PRC_NEW = "prc-new"
PRC_DRILL = "prc-drill-store"  # the drill posed: {"kind", "gpu", "seed"}
PRC_QUESTION = "prc-question"
PRC_ANSWER = "prc-answer"
PRC_CHECK = "prc-check"
PRC_FEEDBACK = "prc-feedback"
PRC_DAYS = "prc-days"
PRC_PLAN = "prc-plan"
