# Build-time material taken from Debian's linux-source-6.1 tarball, never
# copied into the repo: the kselftest harness headers and checkpatch.
CACHE := $(BUILD)/cache
KSFT_DIR := $(CACHE)/kselftest
KSFT_STAMP := $(KSFT_DIR)/.stamp

# Extracted again when the list of what to take changes.
$(KSFT_STAMP): $(TOP)/tools/extract-source.sh
	@test -n "$(LINUX_SOURCE_TAR)" || { echo "linux-source-6.1 missing: run 'make deps'"; exit 1; }
	tools/extract-source.sh "$(LINUX_SOURCE_TAR)" "$(CACHE)"
	touch $@
