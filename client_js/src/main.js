// Entry point (filled in by the views).
document.getElementById("app").textContent = "All Fives";
