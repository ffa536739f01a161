# Written answers: `make` builds submission.pdf, `make clean` removes everything it made.
#
# Needs Python 3 with numpy and matplotlib (for the figures) and LaTeX from Debian's TeX Live:
#   apt-get install -y --no-install-recommends latexmk texlive-latex-base \
#       texlive-latex-recommended poppler-utils
#   pip install numpy matplotlib
# No network is used. latexmk runs pdflatex as often as needed, quietly: the first pass's "undefined
# reference" warnings are normal and go unshown; a warning still there in the last pass is printed, and
# a failed build prints LaTeX's file:line: error. Auxiliary files are removed after a successful build (a
# failed build keeps submission.log for reading).

# the first of the project's .venv (made by ./run.sh) and python3 that has numpy and matplotlib
PYTHON ?= $(firstword $(foreach p,$(wildcard .venv/bin/python) python3,$(if $(shell $(p) -c "import numpy, matplotlib" 2>/dev/null && echo ok),$(p))) python3)
LATEXMK ?= latexmk
LATEXMK_FLAGS = -pdf -silent -interaction=nonstopmode -halt-on-error -file-line-error

# One run of written/figures.py writes all of figures/; its last file stands for the whole set.
FIGURES_DONE = figures/spread_stats.tex

.PHONY: all figures clean

all: submission.pdf

figures: $(FIGURES_DONE)

$(FIGURES_DONE): written/figures.py written/checks.py
	@$(PYTHON) -c "import numpy, matplotlib" 2>/dev/null || { echo "make: $(PYTHON) lacks numpy or matplotlib;" \
	  "install them ($(PYTHON) -m pip install numpy matplotlib), or give make PYTHON=... one that has them" \
	  "(./run.sh test makes .venv with both)" >&2; exit 2; }
	$(PYTHON) written/figures.py

submission.pdf: submission.tex written/results.tex docs/attention_last.png $(FIGURES_DONE)
	@command -v $(LATEXMK) >/dev/null 2>&1 || { echo "make: no $(LATEXMK) (LaTeX); install it: apt-get install" \
	  "latexmk texlive-latex-base texlive-latex-recommended (the list CI uses: .ci/apt-packages.txt)" >&2; exit 2; }
	@$(LATEXMK) $(LATEXMK_FLAGS) submission.tex >/dev/null || { grep -A2 -E '^[^ ]+\.(tex|sty|cls):[0-9]+: ' submission.log >&2; \
	  echo "make: LaTeX stopped at the error above; the whole log is submission.log" >&2; exit 1; }
	@! grep -E '^(LaTeX|Package [a-zA-Z]+) Warning' submission.log >&2 || echo "make: the warnings above are" \
	  "from LaTeX's last pass (submission.log)" >&2
	@$(LATEXMK) -c -silent submission.tex >/dev/null
	@echo "make: wrote submission.pdf"

clean:
	-$(LATEXMK) -C submission.tex
	rm -f submission.pdf submission.aux submission.log submission.out submission.fls \
	      submission.fdb_latexmk submission.synctex.gz
	rm -rf figures
