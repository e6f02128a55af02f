"""Every component id the app uses, in one place, so that a layout and the callbacks that read it
cannot disagree on a spelling. Grouped by page; ids are plain strings (or dict patterns)."""

# shell (app.py)
URL = "url"
PAGE = "page"
NAV = "nav"
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
EXP_PENDING = "exp-pending-upload"  # an upload within the size limit, on its way to the server
EXP_LIMIT = "exp-upload-limit"
EXP_SUMMARY = "exp-summary"
EXP_SHOWN = "exp-shown"  # the report the body shows: {"token", "name"}
EXP_DRAWN = "exp-drawn"  # set once the report's first plot is on screen: the diagnosis waits for it
