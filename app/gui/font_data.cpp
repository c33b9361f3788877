// The app's fonts (DejaVu Sans regular and bold, found at configure time) embedded in the binary, so every glyph the
// app prints is there on a machine without fonts too. DejaVu's licence allows embedding and redistribution.
// .incbin keeps the 1.5 MB out of the compiler (ccache compiles this file every time: it cannot hash the fonts).
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".global tl_gui_font_regular\n"
        "tl_gui_font_regular:\n"
        ".incbin \"" TL_GUI_FONT_REGULAR "\"\n"
        ".global tl_gui_font_regular_end\n"
        "tl_gui_font_regular_end:\n"
        ".balign 16\n"
        ".global tl_gui_font_bold\n"
        "tl_gui_font_bold:\n"
        ".incbin \"" TL_GUI_FONT_BOLD "\"\n"
        ".global tl_gui_font_bold_end\n"
        "tl_gui_font_bold_end:\n"
        ".previous\n");
